#!/usr/bin/env python3
"""QPACK through pylsqpack (ls-qpack, as aioquic uses it), for Ferry's QPACK tests (issue 42).

usage: qpack_oracle.py encode NAME VALUE [NAME VALUE ...]
                                       prints, a line each, the field section (hex) pylsqpack writes for
                                       each field alone, with a dynamic table of capacity 0
       qpack_oracle.py decode HEX      prints the fields of a field section, one NAME<TAB>VALUE a line
"""
import sys

import pylsqpack

if sys.argv[1] == "encode":
    encoder = pylsqpack.Encoder()
    encoder.apply_settings(max_table_capacity=0, blocked_streams=0)
    pairs = sys.argv[2:]
    for index in range(0, len(pairs), 2):
        _, section = encoder.encode(index * 2, [(pairs[index].encode(), pairs[index + 1].encode())])
        print(section.hex())
else:
    decoder = pylsqpack.Decoder(0, 0)
    _, fields = decoder.feed_header(0, bytes.fromhex(sys.argv[2]))
    for name, value in fields:
        print(name.decode() + "\t" + value.decode())
