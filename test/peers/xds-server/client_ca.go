package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"
)

// clientCATLS is server TLS that asks for a client certificate signed by the
// CA in caFile, as istiod's 15012 does: "optional" verifies one if given
// (VerifyClientCertIfGiven, istiod's setting), "required" refuses a client
// without one. The key pair and the CA are read once.
func clientCATLS(certFile, keyFile, caFile, mode string) (*tls.Config, error) {
	config := serverTLS(certFile, keyFile)
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("no certificates in %s", caFile)
	}
	config.ClientCAs = pool
	switch mode {
	case "optional":
		config.ClientAuth = tls.VerifyClientCertIfGiven
	case "required":
		config.ClientAuth = tls.RequireAndVerifyClientCert
	default:
		return nil, fmt.Errorf("--client-cert %q: want optional or required", mode)
	}
	return config, nil
}

// spiffeID is the client certificate's first spiffe:// URI SAN, "" when none.
func spiffeID(state tls.ConnectionState) string {
	if len(state.PeerCertificates) == 0 {
		return ""
	}
	for _, uri := range state.PeerCertificates[0].URIs {
		if uri.Scheme == "spiffe" {
			return uri.String()
		}
	}
	return ""
}

// maxConnectionAge closes every connection after age (GOAWAY, then a second
// of grace), as istiod does every 30 minutes, so clients dial afresh.
func maxConnectionAge(age time.Duration) grpc.ServerOption {
	return grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionAge: age, MaxConnectionAgeGrace: time.Second})
}

// clientSerial is the client certificate's serial in upper-case hex (as the CA peer logs it), "" when none.
func clientSerial(state tls.ConnectionState) string {
	if len(state.PeerCertificates) == 0 {
		return ""
	}
	return strings.ToUpper(state.PeerCertificates[0].SerialNumber.Text(16))
}
