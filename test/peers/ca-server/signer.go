package main

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
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
	return &signer{cert: cert, certPEM: string(certPEM), key: key}, nil
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

func (s *signer) sign(csr *x509.CertificateRequest, lifetime time.Duration) (*issued, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	template := &x509.Certificate{
		SerialNumber: serial,
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(lifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		URIs:         csr.URIs,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, s.cert, csr.PublicKey, s.key)
	if err != nil {
		return nil, err
	}
	leaf := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	return &issued{chain: []string{leaf, s.certPEM}, serial: strings.ToUpper(serial.Text(16)), notAfter: template.NotAfter}, nil
}
