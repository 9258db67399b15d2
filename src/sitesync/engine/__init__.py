"""The worker engine: one process's crawl of a run's hosts (sitesync.engine.worker).

It leases tasks (feeder), holds its hosts' claims (claims, upkeep), fetches each page through
the one request gate (fetch/gate.py) and the redirect walker (page, hops), reads it (pageread), and
commits the reports in batches (reporter). What starts, supervises and ends runs, in one
process or a fleet, is :mod:`sitesync.runs`; the engine never imports it.
"""
