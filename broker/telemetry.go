package broker

import (
	"net"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/telemetry"
)

// newTelemetry makes the client telemetry manager (KIP-714, package
// telemetry) from the telemetry properties and the embedder's hooks.
func (b *Broker) newTelemetry() *telemetry.Manager {
	t := b.cfg.props.Telemetry()
	opts := telemetry.Options{Clock: b.clock, MaxBytes: t.MaxBytes, Hooks: b.telemetryHooks()}
	if t.DefaultInterval > 0 {
		opts.Default = &telemetry.Default{Interval: t.DefaultInterval}
	}
	return telemetry.New(opts)
}

// unknownSoftware is what Kafka's ClientInformation reports for a client
// that did not name its software (ApiVersions below v3, or empty).
const unknownSoftware = "unknown"

// noteClientSoftware keeps the client software ApiVersions v3+ names, for
// telemetry's match patterns and labels.
func (c *conn) noteClientSoftware(req *kmsg.ApiVersionsRequest) {
	if req.Version >= 3 && req.ClientSoftwareName != "" {
		c.software = [2]string{req.ClientSoftwareName, req.ClientSoftwareVersion}
	}
}

// telemetryClient is what the broker knows of the client that sent r, as
// Kafka's ClientMetricsInstanceMetadata gathers it from the request
// context, plus the principal and listener.
func (r *request) telemetryClient(instanceID [16]byte) telemetry.Client {
	c := telemetry.Client{
		InstanceID:      instanceID,
		ClientID:        r.header.ClientID,
		SoftwareName:    r.conn.software[0],
		SoftwareVersion: r.conn.software[1],
		SourceAddress:   r.conn.clientIP(),
		Principal:       r.conn.principal,
	}
	if c.SoftwareName == "" {
		c.SoftwareName, c.SoftwareVersion = unknownSoftware, unknownSoftware
	}
	if r.conn.l != nil {
		c.Listener = r.conn.l.name
	}
	if addr, ok := r.conn.nc.RemoteAddr().(*net.TCPAddr); ok {
		c.SourcePort = addr.Port
	}
	return c
}
