#!/usr/bin/env python3
"""h3_peer.py writing aioquic's qlog of each connection to qlog/ beside CERT (H3_PEER_QLOG), and
allowing three request streams at a time (H3_PEER_MAX_STREAMS=3): what the server parsed of a
client's transport parameters and frames, for interop tests.

usage: h3_peer_qlog.py CERT KEY
"""
import os
import runpy
import sys

directory = os.path.join(os.path.dirname(os.path.abspath(sys.argv[1])), "qlog")
os.makedirs(directory, exist_ok=True)
os.environ["H3_PEER_QLOG"] = directory
os.environ["H3_PEER_MAX_STREAMS"] = "3"
runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "h3_peer.py"), run_name="__main__")
