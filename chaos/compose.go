package chaos

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
)

// ComposeCluster is the docker-compose cluster (docker-compose.cluster.yml,
// started by scripts/cluster-up.sh): node i is service node<i>, published
// on host port 808<i>. Faults are docker's: kill and start, pause and
// unpause, disconnect from and reconnect to the cluster network (with the
// node's fixed address and its name, so peers find it again).
type ComposeCluster struct {
	names, urls, containers, ips []string
	network                      string
}

// OpenCompose finds the containers of a running compose cluster of n
// nodes. With caFile (the cluster's CA: scripts/cluster-up.sh --secure),
// its nodes are reached over HTTPS trusting that CA.
func OpenCompose(ctx context.Context, n int, caFile string) (*ComposeCluster, error) {
	scheme := "http"
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s holds no PEM certificate", caFile)
		}
		setTLS(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
		scheme = "https"
	}
	c := &ComposeCluster{}
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("node%d", i)
		out, err := docker("ps", "-a", "--filter", "label=com.docker.compose.project=raftcat",
			"--filter", "label=com.docker.compose.service="+name, "--format", "{{.Names}}")
		if err != nil || out == "" {
			return nil, fmt.Errorf("no container for %s: is the compose cluster up (scripts/cluster-up.sh)? %v", name, err)
		}
		container := strings.Fields(out)[0]
		netIP, err := docker("inspect", "--format", "{{range $k, $v := .NetworkSettings.Networks}}{{$k}} {{$v.IPAddress}}{{end}}", container)
		if err != nil {
			return nil, err
		}
		f := strings.Fields(netIP)
		if len(f) != 2 {
			return nil, fmt.Errorf("%s: unexpected networks %q", container, netIP)
		}
		c.network = f[0]
		c.names = append(c.names, name)
		c.urls = append(c.urls, fmt.Sprintf("%s://127.0.0.1:%d", scheme, 8080+i))
		c.containers = append(c.containers, container)
		c.ips = append(c.ips, f[1])
	}
	return c, waitReady(ctx, c.urls)
}

func docker(args ...string) (string, error) {
	out, err := exec.Command("docker", args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("docker %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return strings.TrimSpace(string(out)), nil
}

func (c *ComposeCluster) URLs() []string                      { return c.urls }
func (c *ComposeCluster) Names() []string                     { return c.names }
func (c *ComposeCluster) LeaderIndex() int                    { return leaderIndex(c.urls, c.names) }
func (c *ComposeCluster) Digests() ([]string, error)          { return digests(c.urls) }
func (c *ComposeCluster) WaitReady(ctx context.Context) error { return waitReady(ctx, c.urls) }
func (c *ComposeCluster) FaultKinds() []string                { return []string{"kill", "pause", "partition"} }

func (c *ComposeCluster) inject(f *Fault, i int, _ *rand.Rand) (func() error, error) {
	ct, kind := c.containers[i], f.Kind
	do := func(args ...string) func() error {
		return func() error { _, err := docker(args...); return err }
	}
	switch kind {
	case "kill":
		_, err := docker("kill", ct)
		return do("start", ct), err
	case "pause":
		_, err := docker("pause", ct)
		return do("unpause", ct), err
	}
	_, err := docker("network", "disconnect", c.network, ct)
	return do("network", "connect", "--ip", c.ips[i], "--alias", c.names[i], c.network, ct), err
}
