# ready.py URL STAMP_FILE TIMEOUT_S: poll URL every 5 ms until 200; print ms from the time in STAMP_FILE
# (kubelet.py writes the container's exec time there, ms since the epoch) to the first 200. Exit 1 on timeout.
import sys, time, urllib.request
url, stamp, timeout = sys.argv[1], sys.argv[2], float(sys.argv[3])
end = time.time() + timeout
while time.time() < end:
    try:
        with urllib.request.urlopen(url, timeout=1) as r:
            if r.status == 200:
                now = time.time_ns() // 1000000
                for _ in range(200):
                    try: print(now - int(open(stamp).read())); sys.exit(0)
                    except (OSError, ValueError): time.sleep(0.005)
                sys.exit("no exec stamp")
    except SystemExit: raise
    except Exception: pass
    time.sleep(0.005)
sys.exit(f"not ready after {timeout} s: {url}")
