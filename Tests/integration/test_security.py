"""Hostile input end to end (docs/security.md): the real `crier run` against `crier-sim order-sim`
with signed orders and TLS, and the synthesis deadline turning a runaway into a rejected ack."""
import os
import re
import signal
import subprocess

from conftest import CRIER
from test_daemon import Proc, crier_run, order_sim

KEY = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"


def test_signed_orders_spoken_and_wrong_key_rejected_unspoken(box):
    sim = order_sim("--key", KEY)
    crier = crier_run(box, sim.port, "server.key = %s\n" % KEY)
    try:
        crier.wait_for(r"INFO link: connected")
        sim.send("42")
        oid = sim.wait_for(r"^order id=\S+ kind=new_customer number=42", which="out")[0].split()[1][3:]
        sim.wait_for(r"^ack id=%s status=spoken" % re.escape(oid), which="out", timeout=30)
    finally:
        crier.stop()
    # Same server, a box with another key: the order is rejected and never said.
    crier = crier_run(box, sim.port, "server.key = %s\n" % ("ff" * 32))
    try:
        crier.wait_for(r"INFO link: connected")
        sim.send("43")
        oid = sim.wait_for(r"^order id=\S+ kind=new_customer number=43", which="out")[0].split()[1][3:]
        sim.wait_for(r"^ack id=%s status=rejected device=test-box reason=bad_signature" % re.escape(oid), which="out")
        crier.wait_for(r"WARN link: order rejected: bad signature .*id=%s" % re.escape(oid))
    finally:
        crier.stop()
        sim.stop()
    log = "\n".join(crier.lines())
    assert "alert: spoken id=%s" % oid not in log and "saying" not in log
    assert KEY not in log and "ff" * 32 not in log


def test_synthesis_past_its_deadline_is_acked_rejected_and_the_box_carries_on(box):
    sim = order_sim()
    crier = crier_run(box, sim.port, "speech.deadline = 0.001\n")
    try:
        crier.wait_for(r"INFO link: connected")
        sim.send("这是一条很长的提醒。" * 20)
        oid = sim.wait_for(r"^order id=\S+ kind=text", which="out")[0].split()[1][3:]
        sim.wait_for(r"^ack id=%s status=rejected device=test-box reason=speech_failed message=\"speech synthesis took longer than 0.001 s and was cut off" % re.escape(oid), which="out")
        crier.wait_for(r"ERROR alert: could not synthesize; rejecting ids=%s" % re.escape(oid))
        sim.send("hello again")  # still alive and still taking orders
        oid2 = sim.wait_for(r"^order id=\S+ kind=text text=\"hello again\"", which="out")[0].split()[1][3:]
        sim.wait_for(r"^ack id=%s status=" % re.escape(oid2), which="out")
    finally:
        rc = crier.stop()
        sim.stop()
    assert rc == 0


def test_a_text_that_crashes_the_synthesizer_twice_is_refused_and_the_orders_behind_it_are_said(box):
    """espeak-ng is C that has crashed on text nobody expected (docs/security.md, fuzzing). A
    text that ends crier inside the synthesis comes back at every restart (never acked, so the
    server redelivers it): the crash guard refuses it after two ends in a row, the order is
    acked rejected once, and the next order is said. The crash is made by the TEST ONLY
    CRIER_TEST_SPEECH_ABORT (abort() inside the synthesis, where espeak-ng's own aborts are)."""
    sim = order_sim()
    box.env["CRIER_TEST_SPEECH_ABORT"] = "毒药"
    box.env["SWIFT_BACKTRACE"] = "enable=no"
    runs = []
    try:
        crier = crier_run(box, sim.port)
        runs.append(crier)
        crier.wait_for(r"TEST ONLY: CRIER_TEST_SPEECH_ABORT is set")
        crier.wait_for(r"INFO link: connected")
        sim.send("毒药来了")
        oid = sim.wait_for(r"^order id=\S+ kind=text", which="out")[0].split()[1][3:]
        for strike in (1, 2):
            assert crier.p.wait(30) == -signal.SIGABRT, "crier aborted inside the synthesis"
            crier = crier_run(box, sim.port)  # what systemd's Restart= does (the runtime directory kept)
            runs.append(crier)
            crier.wait_for(r"WARN speech: the last run of crier ended inside espeak-ng while synthesizing one text "
                           r"\(%d times? in a row\)" % strike)
            if strike == 1:
                crier.wait_for(r"INFO link: connected")
        sim.wait_for(r"^ack id=%s status=rejected device=test-box reason=speech_failed message=\"crier ended inside espeak-ng 2 times in a row"
                     % re.escape(oid), which="out", timeout=30)
        sim.send("hello again")
        oid2 = sim.wait_for(r"^order id=\S+ kind=text text=\"hello again\"", which="out")[0].split()[1][3:]
        sim.wait_for(r"^ack id=%s status=spoken" % re.escape(oid2), which="out", timeout=30)
        # Still refused (the same text, redelivered or sent again), without a crash.
        sim.send("毒药来了")
        oid3 = sim.wait_for(r"^order id=\S+ kind=text", which="out", count=3)[-1].split()[1][3:]
        sim.wait_for(r"^ack id=%s status=rejected device=test-box reason=speech_failed" % re.escape(oid3), which="out", timeout=30)
        assert crier.p.poll() is None
    finally:
        rc = runs[-1].stop() if runs else 0
        sim.stop()
    assert rc == 0
    acks = [l for l in sim.lines("out") if l.startswith("ack id=%s " % oid)]
    assert len(acks) == 1, acks
    assert open(box.tmp / "speech-mark").read() == "-" * 16 + "\n"
    assert open(box.tmp / "speech-strikes").read().split()[1] == "2"


def make_cert(tmp):
    sh = """set -e; cd "$1"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem -subj /CN=IntegrationCA -days 30 2>/dev/null
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout srv.key -out srv.csr -subj /CN=localhost 2>/dev/null
    printf 'subjectAltName=DNS:localhost\\n' > ext
    openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 30 -extfile ext -out srv.pem 2>/dev/null
    """
    subprocess.run(["bash", "-c", sh, "mk", str(tmp)], check=True)
    return str(tmp / "ca.pem"), str(tmp / "srv.pem"), str(tmp / "srv.key")


def test_tls_end_to_end_with_order_sim(box):
    ca, cert, key = make_cert(box.tmp)
    sim = order_sim("--tls-cert", cert, "--tls-key", key, "--key", KEY)
    box.write_conf("server = tls://localhost:%d\nserver.ca = %s\nserver.key = %s\nserver.token = tok3n\n"
                   "device.id = test-box\nstatus.on_start = off\nstatus.on_link_up = off\ninput = fifo:%s\n"
                   "state.path = %s\n" % (sim.port, ca, KEY, box.tmp / "buttons.fifo", box.tmp / "state"))
    crier = Proc([CRIER, "run", "--config", box.conf], env=box.env)
    try:
        crier.wait_for(r"INFO link: connected server=tls://localhost:%d" % sim.port)
        sim.send("7")
        oid = sim.wait_for(r"^order id=\S+ kind=new_customer number=7", which="out")[0].split()[1][3:]
        sim.wait_for(r"^ack id=%s status=spoken" % re.escape(oid), which="out", timeout=30)
    finally:
        crier.stop()
        sim.stop()
    assert "tok3n" not in "\n".join(crier.lines())


def test_tls_refused_with_a_precise_line_when_the_ca_is_wrong(box):
    ca, cert, key = make_cert(box.tmp)
    sim = order_sim("--tls-cert", cert, "--tls-key", key)
    box.write_conf("server = tls://localhost:%d\ndevice.id = test-box\nstatus.on_start = off\ninput = fifo:%s\n"
                   "state.path = %s\n" % (sim.port, box.tmp / "buttons.fifo", box.tmp / "state"))
    crier = Proc([CRIER, "run", "--config", box.conf], env=box.env)
    try:
        line = crier.wait_for(r"ERROR link: TLS verification failed for localhost: ")[0]
        assert "unable to get local issuer certificate (issuer /CN=IntegrationCA)" in line
        assert "retry_in=" in line and "server.ca" in line
    finally:
        crier.stop()
        sim.stop()
    assert not any("device connected" in l for l in sim.lines("out"))
