#!/usr/bin/env python3
"""h3_peer.py updating its 1-RTT keys halfway through each body (H3_PEER_KEY_UPDATE=1).

usage: h3_peer_key_update.py CERT KEY
"""
import os
import runpy

os.environ["H3_PEER_KEY_UPDATE"] = "1"
runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "h3_peer.py"), run_name="__main__")
