"""A run from request to completion: turning a user's request into a run (request, scans),
crawling it in this process and its helper processes (crawl, processes), and keeping the
fleet's runs going (supervisor, service). The crawl itself is :mod:`sitesync.engine`'s.
"""
