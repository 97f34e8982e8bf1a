package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	o, err := parse([]string{
		"--kubeconfig", "kc", "--context", "prod",
		"--pool", "name=h100,product=NVIDIA-H100-80GB-HBM3,nodes=4,driver=570.172.08",
		"--pool", "name=a100,product=NVIDIA-A100-SXM4-80GB,nodes=2,driver=570.172.08",
		"--bad-driver", "590.1.1", "--install-time", "5s",
	}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if len(o.pools) != 2 || o.pools[1].Name != "a100" || o.installTime != 5*time.Second ||
		o.context != "prod" || len(o.badDrivers) != 1 {
		t.Errorf("parse = %+v", o)
	}
}

func TestParseReportsEveryProblem(t *testing.T) {
	_, err := parse([]string{"--bad-driver", "latest"}, &bytes.Buffer{})
	for _, want := range []string{"--kubeconfig is required", "--pool is required", "--bad-driver"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not mention %q", err, want)
		}
	}
}
