package etcdtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
)

// certs are the PEM files of a TLS cluster, all under dir.
type certs struct {
	dir     string
	ca      string
	server  pair
	clients map[string]pair
}

type pair struct{ cert, key string }

// makeCerts writes a CA, one server certificate for 127.0.0.1 and
// localhost (used by every member for clients and peers alike, so it is
// valid for both server and client authentication), and one client
// certificate per user with the user as common name.
func makeCerts(dir string, users []string) (*certs, error) {
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "etcdtest CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	c := &certs{dir: dir, ca: filepath.Join(dir, "ca.pem"), clients: map[string]pair{}}
	if err := writePEM(c.ca, "CERTIFICATE", caDER); err != nil {
		return nil, err
	}
	issue := func(name string, tmpl *x509.Certificate) (pair, error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return pair{}, err
		}
		tmpl.SerialNumber = serial()
		tmpl.NotBefore = now.Add(-time.Hour)
		tmpl.NotAfter = now.Add(24 * time.Hour)
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			return pair{}, err
		}
		keyDER, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return pair{}, err
		}
		p := pair{cert: filepath.Join(dir, name+".pem"), key: filepath.Join(dir, name+"-key.pem")}
		if err := writePEM(p.cert, "CERTIFICATE", der); err != nil {
			return pair{}, err
		}
		return p, writePEM(p.key, "PRIVATE KEY", keyDER)
	}
	c.server, err = issue("server", &x509.Certificate{
		Subject:     pkix.Name{CommonName: "etcdtest member"},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return nil, err
	}
	for _, u := range users {
		if u == "server" || u == "ca" {
			return nil, fmt.Errorf("user name %q is taken by the cluster's own certificate files", u)
		}
		p, err := issue(u, &x509.Certificate{
			Subject:     pkix.Name{CommonName: u},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		})
		if err != nil {
			return nil, err
		}
		c.clients[u] = p
	}
	return c, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		panic(err)
	}
	return n
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}

// serverTLSInfo serves clients and peers with the server certificate and
// requires a certificate of the test CA from both.
func (c *certs) serverTLSInfo() transport.TLSInfo {
	return transport.TLSInfo{
		CertFile:       c.server.cert,
		KeyFile:        c.server.key,
		TrustedCAFile:  c.ca,
		ClientCertAuth: true,
	}
}

// clientTLS trusts the test CA and presents user's certificate when there
// is one.
func (c *certs) clientTLS(user string) (*tls.Config, error) {
	caPEM, err := os.ReadFile(c.ca)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("no certificate in %s", c.ca)
	}
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if p, ok := c.clients[user]; ok {
		kp, err := tls.LoadX509KeyPair(p.cert, p.key)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{kp}
	}
	return cfg, nil
}
