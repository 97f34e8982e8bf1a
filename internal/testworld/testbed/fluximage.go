package testbed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// Names of the image automation and notification programs hack/testbin.sh
// builds.
const (
	binImageReflector  = "image-reflector-controller"
	binImageAutomation = "image-automation-controller"
	binNotification    = "notification-controller"
)

// CheckFluxImage reports whether the image automation and notification
// controllers and their CRDs are present.
func (b Binaries) CheckFluxImage() error {
	if err := b.check(binImageReflector, binImageAutomation, binNotification); err != nil {
		return err
	}
	matches, _ := filepath.Glob(filepath.Join(b.FluxImageCRDDir(), "*.yaml"))
	if len(matches) == 0 {
		return fmt.Errorf("%w: no Flux image automation CRDs in %s: run `make testbin`",
			ErrMissingBinaries, b.FluxImageCRDDir())
	}
	return nil
}

// FluxImageCRDDir is the folder of the CRDs of image-reflector-controller,
// image-automation-controller and notification-controller. They are kept apart
// from [Binaries.FluxCRDDir] so clusters that do not run these controllers
// do not pay for installing them.
func (b Binaries) FluxImageCRDDir() string { return filepath.Join(b.Dir, "crds", "flux-image") }

// notificationAddrs are the loopback addresses of one cluster's
// notification-controller, chosen before any controller starts so that the
// others can be told where to send their events.
type notificationAddrs struct {
	events, receiver, health int
}

func newNotificationAddrs() (*notificationAddrs, error) {
	var ports [3]int
	for i := range ports {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	return &notificationAddrs{events: ports[0], receiver: ports[1], health: ports[2]}, nil
}

// eventsURL is what the other controllers get as --events-addr.
func (n *notificationAddrs) eventsURL() string {
	if n == nil {
		return ""
	}
	return "http://127.0.0.1:" + strconv.Itoa(n.events)
}

// startFluxExtras starts, next to the cluster's source- and
// kustomize-controller, the image automation controllers (imageAuto) and
// notification-controller (notif != nil). They join c.Flux, so they are
// stopped and their logs tailed with the others.
func startFluxExtras(ctx context.Context, bins Binaries, c *Cluster, imageAuto bool, notif *notificationAddrs) error {
	dir := filepath.Join(c.Dir, "flux")
	env := environ(map[string]string{"KUBECONFIG": c.Kubeconfig, "RUNTIME_NAMESPACE": FluxNamespace})
	type ctl struct {
		name   string
		health int
		args   []string
	}
	var ctls []ctl
	if notif != nil {
		ctls = append(ctls, ctl{binNotification, notif.health, []string{
			"--events-addr=127.0.0.1:" + strconv.Itoa(notif.events),
			// camelCase: the flag really is spelled so.
			"--receiverAddr=127.0.0.1:" + strconv.Itoa(notif.receiver),
		}})
	}
	if imageAuto {
		storage := filepath.Join(dir, "image-storage")
		// The default, /data, is neither writable nor per cluster.
		if err := os.MkdirAll(storage, 0o755); err != nil {
			return fmt.Errorf("cluster %s: flux: %w", c.Name, err)
		}
		ctls = append(ctls,
			ctl{binImageReflector, 0, []string{"--storage-path=" + storage, "--requeue-dependency=2s"}},
			ctl{binImageAutomation, 0, nil},
		)
	}
	first := len(c.Flux.procs)
	for i := range ctls {
		if ctls[i].health == 0 {
			p, err := freePort()
			if err != nil {
				return err
			}
			ctls[i].health = p
		}
		args := append([]string{
			"--metrics-addr=0",
			"--health-addr=127.0.0.1:" + strconv.Itoa(ctls[i].health),
			"--enable-leader-election=false",
			"--log-level=info",
		}, ctls[i].args...)
		if notif != nil && ctls[i].name != binNotification {
			args = append(args, "--events-addr="+notif.eventsURL())
		}
		p, err := startProcess(ctls[i].name, bins.Path(ctls[i].name), args, env, filepath.Join(dir, ctls[i].name+".log"))
		if err != nil {
			return err
		}
		c.Flux.procs = append(c.Flux.procs, p)
	}
	for i, ct := range ctls {
		url := "http://127.0.0.1:" + strconv.Itoa(ct.health) + "/readyz"
		if err := waitReady(ctx, c.Flux.procs[first+i], url); err != nil {
			return fmt.Errorf("cluster %s: %w", c.Name, err)
		}
	}
	if notif != nil {
		c.Flux.ReceiverURL = "http://127.0.0.1:" + strconv.Itoa(notif.receiver)
		c.Flux.EventsURL = notif.eventsURL()
	}
	return nil
}

// errNeedsFlux is returned when image automation or notifications are asked
// for without Flux itself.
var errNeedsFlux = errors.New("testbed: FluxImage and Notification need Flux")
