#!/usr/bin/env python3
"""h3_peer.py speaking QUIC version 2 only (H3_PEER_VERSIONS=2).

usage: h3_peer_v2_only.py CERT KEY
"""
import os
import runpy

os.environ["H3_PEER_VERSIONS"] = "2"
runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "h3_peer.py"), run_name="__main__")
