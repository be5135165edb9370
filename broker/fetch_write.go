package broker

import (
	"net"

	"github.com/sharebroker/sharebroker/wire"
)

// sendFetch writes a Fetch answer whose records may stay in segment files
// until they go out (docs/log.md fetch-from-files): the frame's segments in
// vectored writes, and each source's bytes where its nil segment stands,
// written from the files by the source (sendfile on a plain TCP
// connection, bounded pieces on TLS). The write deadline send set covers
// the whole answer. Once it is written, or has failed, the connection's
// read buffer lets go of the copies and pinned sections the answer was
// read into (fetch-pins-segments), so an idle connection pins no deleted
// segment.
func (c *conn) sendFetch(correlationID int32, r *wire.FetchResponse) bool {
	defer c.readBuf.Reset()
	wire.EmptyFetchRecordSets(&r.FetchResponse)
	var srcs []wire.RecordSource
	var spliced bool
	c.buf, c.segs, srcs, spliced = r.AppendFrame(c.buf[:0], c.segs[:0], correlationID)
	if !spliced {
		c.buf = wire.AppendResponse(c.buf[:0], correlationID, r)
		_, err := c.nc.Write(c.buf)
		return c.sent(err)
	}
	err := writeFrame(c.nc, c.segs, srcs)
	clear(c.segs) // drop the references into the logs
	return c.sent(err)
}

// writeFrame writes segs in order, each run of them in one vectored write,
// and for each nil segment the next of srcs.
func writeFrame(nc net.Conn, segs [][]byte, srcs []wire.RecordSource) error {
	for len(segs) > 0 {
		k := 0
		for k < len(segs) && segs[k] != nil {
			k++
		}
		if k > 0 {
			bufs := net.Buffers(segs[:k])
			if _, err := bufs.WriteTo(nc); err != nil {
				return err
			}
		}
		if k == len(segs) {
			return nil
		}
		if _, err := srcs[0].WriteTo(nc); err != nil {
			return err
		}
		segs, srcs = segs[k+1:], srcs[1:]
	}
	return nil
}
