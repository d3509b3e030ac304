# echo.py PORT: the app container of the harness pods. Answers every GET with its request headers as JSON
# (so the client's SPIFFE identity shows in X-Forwarded-Client-Cert, which the server's sidecar sets).
import json, sys
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
class H(BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"path": self.path, "headers": dict(self.headers)}).encode()
        self.send_response(200); self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
    def log_message(self, *a): pass
ThreadingHTTPServer(("0.0.0.0", int(sys.argv[1])), H).serve_forever()
