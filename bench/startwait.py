#!/usr/bin/env python3
"""Waits, in one process, for what bench/startup.sh times, and prints the epoch seconds it came.

    startwait.py ready PORT PID        until http://127.0.0.1:PORT/-/health/ready answers 200
    startwait.py logged FILE TEXT PID  until FILE holds TEXT

Prints nothing if process PID ends first or after 600 s. Polling every 10 ms from one process
instead of a curl (or grep) and a sleep per try: those forks took a good part of a core from the
start being measured on a 2-core machine.
"""
import http.client
import os
import sys
import time


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


def ready(port):
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        c.request("GET", "/-/health/ready")
        ok = c.getresponse().status == 200
        c.close()
        return ok
    except OSError:
        return False


def logged(path, text):
    try:
        with open(path, "rb") as f:
            return text.encode() in f.read()
    except OSError:
        return False


def main():
    what = sys.argv[1]
    if what == "ready":
        port, pid = int(sys.argv[2]), int(sys.argv[3])
        check = lambda: ready(port)
    elif what == "logged":
        path, text, pid = sys.argv[2], sys.argv[3], int(sys.argv[4])
        check = lambda: logged(path, text)
    else:
        sys.exit("usage: startwait.py ready PORT PID | logged FILE TEXT PID")
    end = time.monotonic() + 600
    while time.monotonic() < end and alive(pid):
        if check():
            print(f"{time.time():.3f}")
            return
        time.sleep(0.01)


main()
