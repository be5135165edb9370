package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/sharebroker/sharebroker/broker"
)

// newHealthcheckCommand asks a running broker's /readyz; it exits 0 when
// the broker is ready and 1 otherwise, for a container HEALTHCHECK.
func newHealthcheckCommand() *cobra.Command {
	var addr string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "healthcheck",
		Short: "Exit 0 if the broker at --http answers /readyz, else 1",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			if err := checkReady(ctx, addr); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), "ready")
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "http", broker.DefaultHTTP, "the broker's HTTP address, HOST:PORT (an unspecified host means loopback)")
	cmd.Flags().DurationVar(&timeout, "timeout", 3*time.Second, "how long to wait for the answer")
	return cmd
}

func checkReady(ctx context.Context, addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || addr == "" {
		return fmt.Errorf("--http %q: want HOST:PORT", addr)
	}
	// The broker's own listen address may be 0.0.0.0 or [::] (a container):
	// ask it on loopback.
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
		if ip != nil && ip.To4() == nil {
			host = "::1"
		}
	}
	url := "http://" + net.JoinHostPort(host, port) + "/readyz"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("not ready: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("not ready: %s answered %d: %s", url, resp.StatusCode, body)
	}
	return nil
}
