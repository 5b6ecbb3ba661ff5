#!/usr/bin/env python3
"""Host part of the VM first-sound benchmark (firstsound.sh): bench.py's protocol-1 order server on
$PORT (the guest's 10.0.2.100:7000), driven by the guest through the control line ("stdin ..."):

  T <label>   send the text order <label> (one | ten | long: bench.py's first-sound texts)
  C           cancel the order sent last (Crier fades it out and acks "cancelled"; the peer
              ignores cancels and is stopped in the guest)

Short commands, so that the serial line's 115200 baud (a 500-character text is 1.5 kB, 130 ms)
is not part of what is measured. The guest marks its capture when it writes the command."""
import os, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from bench import Bench, OrderServer  # noqa: E402

texts = {"one": None, "ten": None, "long": None}
for label, text, _ in Bench.first_sound_texts():
    key = {"one order": "one", "ten-number alert": "ten", "500-character text": "long"}.get(label)
    if key:
        texts[key] = text
srv = OrderServer(port=int(os.environ["PORT"]))
print("firstsound_server: listening on %d" % srv.port, flush=True)
last, n = None, 0
for line in sys.stdin:
    cmd = line.split()
    try:
        if cmd[:1] == ["T"] and len(cmd) == 2 and cmd[1] in texts:
            n += 1
            last = "FS%d-%d" % (os.getpid(), n)
            srv.send_order({"type": "order", "id": last, "kind": "text", "text": texts[cmd[1]]})
            print("firstsound_server: sent %s (%s)" % (last, cmd[1]), flush=True)
        elif cmd == ["C"] and last:
            srv.send_order({"type": "cancel", "id": last})
        else:
            print("firstsound_server: ignored %r" % line.strip(), flush=True)
    except Exception as e:  # a device not connected at this moment: say so, keep serving
        print("firstsound_server: %s" % e, flush=True)
