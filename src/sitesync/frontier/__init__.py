"""The frontier: which URLs become tasks (``scope``, ``frontier``: scoping and dedup), when a
failed one is tried again (``retry``), and how tasks and runs move between states
(``transitions``: the one table the stores are held to)."""
