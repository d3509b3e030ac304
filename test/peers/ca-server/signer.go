package main

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"strings"
	"time"
)

type signer struct {
	cert    *x509.Certificate
	certPEM string
	key     crypto.Signer
	// other is a second CA nobody trusts, for the wrong-root answer.
	other *signer
}

// hostileModes are the answers a misbehaving CA gives; "" is an honest one.
var hostileModes = map[string]string{
	"":                "an honest chain: leaf, root",
	"non-certificate": "a valid leaf followed by an element that is not a certificate",
	"expired":         "a leaf that expired an hour ago",
	"not-yet-valid":   "a leaf valid from an hour from now",
	"wrong-root":      "a leaf signed by another CA, with that CA as root",
	"self-root":       "the leaf sent as its own root",
}

type issued struct {
	chain    []string
	serial   string
	notAfter time.Time
}

func loadSigner(certFile, keyFile string) (*signer, error) {
	if certFile == "" || keyFile == "" {
		return nil, errors.New("--ca-cert and --ca-key are required")
	}
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, err
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, err
	}
	certBlock, _ := pem.Decode(certPEM)
	keyBlock, _ := pem.Decode(keyPEM)
	if certBlock == nil || keyBlock == nil {
		return nil, errors.New("CA certificate or key is not PEM")
	}
	cert, err := x509.ParseCertificate(certBlock.Bytes)
	if err != nil {
		return nil, err
	}
	key, err := parseKey(keyBlock.Bytes)
	if err != nil {
		return nil, err
	}
	other, err := newThrowawayCA()
	if err != nil {
		return nil, err
	}
	return &signer{cert: cert, certPEM: string(certPEM), key: key, other: other}, nil
}

// newThrowawayCA makes a self-signed CA in memory, named like the real one.
func newThrowawayCA() (*signer, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	template := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{Organization: []string{"cluster.local"}, CommonName: "test-root"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(48 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, key.Public(), key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &signer{cert: cert, certPEM: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), key: key}, nil
}

func parseKey(der []byte) (crypto.Signer, error) {
	if key, err := x509.ParsePKCS8PrivateKey(der); err == nil {
		if s, ok := key.(crypto.Signer); ok {
			return s, nil
		}
	}
	if key, err := x509.ParseECPrivateKey(der); err == nil {
		return key, nil
	}
	if key, err := x509.ParsePKCS1PrivateKey(der); err == nil {
		return key, nil
	}
	return nil, errors.New("unsupported CA key")
}

// parseCSR checks the CSR's signature and returns it with its one SPIFFE URI.
func parseCSR(text string) (*x509.CertificateRequest, string, error) {
	block, _ := pem.Decode([]byte(text))
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, "", errors.New("the csr is not a PEM certificate request")
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, "", err
	}
	if err := csr.CheckSignature(); err != nil {
		return nil, "", fmt.Errorf("csr signature: %w", err)
	}
	if len(csr.URIs) != 1 || csr.URIs[0].Scheme != "spiffe" {
		return nil, "", errors.New("the csr must carry exactly one spiffe:// URI SAN")
	}
	return csr, csr.URIs[0].String(), nil
}

func (s *signer) sign(csr *x509.CertificateRequest, lifetime time.Duration, hostile string) (*issued, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	notBefore, notAfter := now.Add(-time.Minute), now.Add(lifetime)
	switch hostile {
	case "expired":
		notBefore, notAfter = now.Add(-2*time.Hour), now.Add(-time.Hour)
	case "not-yet-valid":
		notBefore, notAfter = now.Add(time.Hour), now.Add(time.Hour+lifetime)
	}
	issuer := s
	if hostile == "wrong-root" {
		issuer = s.other
	}
	template := &x509.Certificate{
		SerialNumber: serial,
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		URIs:         csr.URIs,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, issuer.cert, csr.PublicKey, issuer.key)
	if err != nil {
		return nil, err
	}
	leaf := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	chain := []string{leaf, issuer.certPEM}
	switch hostile {
	case "non-certificate":
		chain = []string{leaf, "this is not a certificate"}
	case "self-root":
		chain = []string{leaf, leaf}
	}
	return &issued{chain: chain, serial: strings.ToUpper(serial.Text(16)), notAfter: template.NotAfter}, nil
}

// csrFacts: the CSR's key type and size, its subject, and whether its SAN
// extension is marked critical.
func csrFacts(text string) (map[string]any, error) {
	csr, _, err := parseCSR(text)
	if err != nil {
		return nil, err
	}
	facts := map[string]any{"subject": csr.Subject.String(), "sanCritical": false}
	for _, ext := range csr.Extensions {
		if ext.Id.Equal(asn1.ObjectIdentifier{2, 5, 29, 17}) {
			facts["sanCritical"] = ext.Critical
		}
	}
	switch key := csr.PublicKey.(type) {
	case *rsa.PublicKey:
		facts["key"] = fmt.Sprintf("RSA-%d", key.N.BitLen())
	case *ecdsa.PublicKey:
		facts["key"] = "EC-" + key.Curve.Params().Name
	}
	return facts, nil
}
