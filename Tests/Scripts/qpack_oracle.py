#!/usr/bin/env python3
"""QPACK through pylsqpack (ls-qpack, as aioquic uses it), for Ferry's QPACK tests (issue 42).

usage: qpack_oracle.py encode NAME VALUE [NAME VALUE ...]
                                       prints, a line each, the field section (hex) pylsqpack writes for
                                       each field alone, with a dynamic table of capacity 0
       qpack_oracle.py decode HEX      prints the fields of a field section, one NAME<TAB>VALUE a line
       qpack_oracle.py dynamic CAPACITY BLOCKED JSON
                                       encodes each field list of JSON (a list of lists of [name, value])
                                       on request streams 0, 4, 8, ... with a dynamic table of CAPACITY
                                       and BLOCKED streams allowed to block (nothing acknowledged), and
                                       prints a line each: the encoder stream's bytes (hex, "-" for none)
                                       and the field section (hex)
"""
import json
import sys

import pylsqpack

if sys.argv[1] == "encode":
    encoder = pylsqpack.Encoder()
    encoder.apply_settings(max_table_capacity=0, blocked_streams=0)
    pairs = sys.argv[2:]
    for index in range(0, len(pairs), 2):
        _, section = encoder.encode(index * 2, [(pairs[index].encode(), pairs[index + 1].encode())])
        print(section.hex())
elif sys.argv[1] == "dynamic":
    encoder = pylsqpack.Encoder()
    pending = encoder.apply_settings(max_table_capacity=int(sys.argv[2]), blocked_streams=int(sys.argv[3]))
    for index, fields in enumerate(json.loads(sys.argv[4])):
        instructions, section = encoder.encode(index * 4, [(name.encode(), value.encode()) for name, value in fields])
        instructions = pending + instructions
        pending = b""
        print((instructions.hex() or "-") + " " + section.hex())
else:
    decoder = pylsqpack.Decoder(0, 0)
    _, fields = decoder.feed_header(0, bytes.fromhex(sys.argv[2]))
    for name, value in fields:
        print(name.decode() + "\t" + value.decode())
