#!/usr/bin/env python3
"""h3_peer.py allowing a client three request streams at a time (H3_PEER_MAX_STREAMS=3).

usage: h3_peer_few_streams.py CERT KEY
"""
import os
import runpy

os.environ["H3_PEER_MAX_STREAMS"] = "3"
runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "h3_peer.py"), run_name="__main__")
