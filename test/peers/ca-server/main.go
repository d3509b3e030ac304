// Command ca-server is a test peer shaped like istiod's CA: it serves
// istio.v1.auth.IstioCertificateService/CreateCertificate (the definitions
// from istio.io/api), checks the caller's bearer token and the SPIFFE
// identity its CSR asks for, and signs with a test CA. A loopback control
// endpoint tells it to refuse, to be slow or to issue short-lived
// certificates, so tests can drive the agent's CA client through failures.
// Every event is one JSON object per line on stdout.
package main

import (
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	pb "istio.io/api/security/v1alpha1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

func main() {
	address := flag.String("address", "127.0.0.1:0", "gRPC listen address (port 0 picks a free port)")
	controlAddress := flag.String("control", "127.0.0.1:0", "HTTP control listen address")
	caCert := flag.String("ca-cert", "", "signing CA certificate (PEM), required")
	caKey := flag.String("ca-key", "", "signing CA private key (PEM), required")
	tlsCert := flag.String("tls-cert", "", "server certificate (PEM); with --tls-key serves TLS, else plaintext")
	tlsKey := flag.String("tls-key", "", "server private key (PEM)")
	altTLSCert := flag.String("alt-tls-cert", "", "a second server certificate (PEM), served while the mode says altCert")
	altTLSKey := flag.String("alt-tls-key", "", "its private key (PEM)")
	token := flag.String("token", "", "bearer token every request must carry (empty: no check)")
	identity := flag.String("identity", "", "the only SPIFFE ID a CSR may ask for (empty: any spiffe:// URI)")
	ttl := flag.Duration("ttl", 24*time.Hour, "lifetime of issued certificates unless the request asks for less")
	flag.Parse()

	signer, err := loadSigner(*caCert, *caKey)
	if err != nil {
		fail("ca", err)
	}
	svc := &service{signer: signer, token: *token, identity: *identity, mode: mode{TTLSeconds: int64(ttl.Seconds())}}
	listener, err := net.Listen("tcp", *address)
	if err != nil {
		fail("listen", err)
	}
	grpcListener := &trackingListener{Listener: listener, conns: map[*trackedConn]struct{}{}}
	// A CA that changes its certificate restarts: a client's kept connection ends and meets the new one.
	svc.onCertChange = grpcListener.closeAll
	controlListener, err := net.Listen("tcp", *controlAddress)
	if err != nil {
		fail("listen control", err)
	}
	server, err := newGrpcServer(svc, *tlsCert, *tlsKey, *altTLSCert, *altTLSKey)
	if err != nil {
		fail("tls", err)
	}
	pb.RegisterIstioCertificateServiceServer(server, svc)
	go func() { _ = http.Serve(controlListener, svc.controlHandler()) }()
	go func() { _ = server.Serve(grpcListener) }()
	emit(map[string]any{"event": "listening", "address": grpcListener.Addr().String(), "control": controlListener.Addr().String()})

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
	server.Stop()
}

func newGrpcServer(svc *service, certFile, keyFile, altCertFile, altKeyFile string) (*grpc.Server, error) {
	if certFile == "" {
		return grpc.NewServer(), nil
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	alt := pair
	if altCertFile != "" {
		if alt, err = tls.LoadX509KeyPair(altCertFile, altKeyFile); err != nil {
			return nil, err
		}
	}
	pick := func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
		if svc.current().AltCert {
			return &alt, nil
		}
		return &pair, nil
	}
	creds := credentials.NewTLS(&tls.Config{GetCertificate: pick, MinVersion: tls.VersionTLS12})
	return grpc.NewServer(grpc.Creds(creds)), nil
}

// trackingListener keeps the gRPC connections open now, to end them all at once.
type trackingListener struct {
	net.Listener
	mu    sync.Mutex
	conns map[*trackedConn]struct{}
}

type trackedConn struct {
	net.Conn
	owner *trackingListener
}

func (l *trackingListener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tracked := &trackedConn{Conn: conn, owner: l}
	l.mu.Lock()
	l.conns[tracked] = struct{}{}
	l.mu.Unlock()
	return tracked, nil
}

func (c *trackedConn) Close() error {
	c.owner.mu.Lock()
	delete(c.owner.conns, c)
	c.owner.mu.Unlock()
	return c.Conn.Close()
}

func (l *trackingListener) closeAll() {
	l.mu.Lock()
	open := make([]*trackedConn, 0, len(l.conns))
	for conn := range l.conns {
		open = append(open, conn)
	}
	l.mu.Unlock()
	for _, conn := range open {
		_ = conn.Close()
	}
}

// emit writes one event line; tests read them to see what the CA was asked.
func emit(event map[string]any) {
	line, _ := json.Marshal(event)
	fmt.Println(string(line))
}

func fail(what string, err error) {
	fmt.Fprintf(os.Stderr, "ca-server: %s: %v\n", what, err)
	os.Exit(2)
}
