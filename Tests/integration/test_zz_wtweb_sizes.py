import http.client
from test_web import Web

def test_sizes(box, capsys):
    w = Web(box)
    try:
        out = []
        for path in ("/?lang=zh", "/?lang=en", "/app.js", "/app.css"):
            c = http.client.HTTPConnection("127.0.0.1", w.port, timeout=10)
            c.request("GET", path, headers={"Host": "127.0.0.1:%d" % w.port})
            out.append((path, len(c.getresponse().read())))
        with capsys.disabled():
            print("\nSIZES", out)
    finally:
        w.stop()
