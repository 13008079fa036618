#!/usr/bin/env python3
"""h3_peer.py answering each first Initial with a Retry (H3_PEER_RETRY=1).

usage: h3_peer_retry.py CERT KEY
"""
import os
import runpy

os.environ["H3_PEER_RETRY"] = "1"
runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "h3_peer.py"), run_name="__main__")
