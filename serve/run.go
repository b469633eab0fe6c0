package serve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// RunOptions are the optional parts of Run.
type RunOptions struct {
	// Server is the server to run: its Handler may be a service's own mux
	// that mounts h. Nil: a server whose Handler is h, with a
	// ReadHeaderTimeout of 10 s, a ReadTimeout of 1 min, an IdleTimeout
	// of 2 min, and the Logger of h's Options as its ErrorLog.
	Server *http.Server
	// SkipDelay, when done during the drain delay, ends the delay at once
	// (ndpp-bench serve: a second SIGTERM or SIGINT); its cause is logged.
	SkipDelay context.Context
}

// Run serves on ln until ctx is done, then drains, as net/http's
// Server.Shutdown does after a delay that lets load balancers see the
// service go: h's /readyz answers 503 "draining" at once while the
// listener keeps accepting and serving for Options.DrainDelay (or until
// o.SkipDelay is done), with keep-alives off so that clients reconnect to
// where the load balancer sends them; then the listener closes
// (http.Server.Shutdown) and the requests in flight finish or meet their
// deadlines. ctx's cause (context.Cause) is logged as the reason.
//
// Run returns nil when the requests in flight have all answered, and an
// error naming how many were still running if they have not by
// Options.ShutdownTimeout after the listener closed (the connections are
// then closed). If the listener fails first, Run returns its error.
func Run(ctx context.Context, ln net.Listener, h *Handler, o RunOptions) error {
	srv := o.Server
	if srv == nil {
		srv = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute,
			IdleTimeout: 2 * time.Minute, ErrorLog: h.log}
	}
	skip := o.SkipDelay
	if skip == nil {
		skip = context.Background()
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	failed := func(err error) error {
		if err == nil || errors.Is(err, http.ErrServerClosed) {
			err = errors.New("the listener stopped")
		}
		return err
	}
	select {
	case err := <-served:
		return failed(err)
	case <-ctx.Done():
	}
	// Drain: not ready, still serving, until the delay is over or skipped.
	h.draining.Store(true)
	srv.SetKeepAlivesEnabled(false)
	log := h.log
	log.Printf("%v: not ready; still serving for --drain-delay %v", context.Cause(ctx), h.opts.DrainDelay)
	delay := time.NewTimer(h.opts.DrainDelay)
	select {
	case err := <-served:
		delay.Stop()
		return failed(err)
	case <-skip.Done():
		delay.Stop()
		log.Printf("%v: skipping the rest of the drain delay", context.Cause(skip))
	case <-delay.C:
	}
	timeout := h.opts.ShutdownTimeout
	log.Printf("closing the listener; finishing the %s in flight (at most --shutdown-timeout %v)", plural(h.active.Load(), "request"), timeout)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		running := h.active.Load()
		srv.Close()
		if running == 0 { // a client still sending its request line or headers
			return fmt.Errorf("shutdown: connections still open after --shutdown-timeout %v (no request being handled)", timeout)
		}
		return fmt.Errorf("shutdown: %s still running after --shutdown-timeout %v", plural(running, "request"), timeout)
	}
	log.Printf("stopped")
	return nil
}
