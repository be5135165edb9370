package sharebroker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// The test control API's requests (README "Test control"; httpapi's
// testapi.go owns the JSON). The broker's clock in the container is real
// time plus an offset that only grows.

// ErrTestAPIOff is returned by the test API helpers of a container run
// WithoutTestAPI.
var ErrTestAPIOff = errors.New("sharebroker: the test API is off (WithoutTestAPI)")

// Leadership is a partition's leader after MoveLeader.
type Leadership struct {
	Topic       string `json:"topic"`
	Partition   int32  `json:"partition"`
	Leader      int32  `json:"leader"`
	LeaderEpoch int32  `json:"leader_epoch"`
}

// AdvanceClock moves the broker's clock forward by d and returns the new
// time. Every timer that fell due (acquisition locks, session timeouts,
// long polls, retention) has fired when it returns.
func (c *Container) AdvanceClock(ctx context.Context, d time.Duration) (time.Time, error) {
	if d <= 0 {
		return time.Time{}, fmt.Errorf("advance clock by %v: want a positive duration", d)
	}
	var out struct {
		Now time.Time `json:"now"`
	}
	err := c.post(ctx, "/v1/test/clock/advance", map[string]string{"duration": d.String()}, &out)
	return out.Now, err
}

// Now returns the broker's clock.
func (c *Container) Now(ctx context.Context) (time.Time, error) {
	if !c.testAPI {
		return time.Time{}, ErrTestAPIOff
	}
	body, err := c.get(ctx, "/v1/test/clock")
	if err != nil {
		return time.Time{}, err
	}
	var out struct {
		Now time.Time `json:"now"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return time.Time{}, fmt.Errorf("clock answer %q: %w", body, err)
	}
	return out.Now, nil
}

// MoveLeader makes node the leader of one partition (a container run
// WithNodes(n), n > 1), as a real cluster's leader election would: the
// leader epoch goes up by one and clients of the old leader are told
// NOT_LEADER_OR_FOLLOWER.
func (c *Container) MoveLeader(ctx context.Context, topic string, partition, node int32) (Leadership, error) {
	var out Leadership
	err := c.post(ctx, "/v1/test/leaders", map[string]any{"topic": topic, "partition": partition, "node": node}, &out)
	return out, err
}

func (c *Container) post(ctx context.Context, path string, in, out any) error {
	if !c.testAPI {
		return ErrTestAPIOff
	}
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+c.httpAddr+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	answer, err := c.do(req)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(answer, out); err != nil {
		return fmt.Errorf("POST %s answer %q: %w", path, answer, err)
	}
	return nil
}

func (c *Container) get(ctx context.Context, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+c.httpAddr+path, nil)
	if err != nil {
		return nil, err
	}
	return c.do(req)
}

// do sends req with the token and returns the body of a 2xx answer, or an
// error carrying the broker's own message ({"error": ...}).
func (c *Container) do(req *http.Request) ([]byte, error) {
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(body, &e) == nil && e.Error != "" {
			return nil, fmt.Errorf("%s %s: %s: %s", req.Method, req.URL.Path, resp.Status, e.Error)
		}
		return nil, fmt.Errorf("%s %s: %s: %q", req.Method, req.URL.Path, resp.Status, body)
	}
	return body, nil
}
