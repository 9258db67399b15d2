"""The worker engine: one process's crawl of a run's hosts (sitesync.engine.worker).

It leases tasks (feeder), holds its hosts' claims (claims, upkeep), fetches each page through
the polite gate and the redirect walker (page, hops, pageturn), reads it (pageread), and
commits the reports in batches (reporter). What starts, supervises and ends runs, in one
process or a fleet, is :mod:`sitesync.runs`; the engine never imports it.
"""
