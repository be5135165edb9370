package storage

// Decompress returns src in the clear, decoded with the codec a Kafka
// compression type ID names (0 none, 1 gzip, 2 snappy in either framing,
// 3 lz4, 4 zstd): the same decoders the log uses for record batches, with
// their bound on the decompressed size. Package telemetry decodes the
// payload of a PushTelemetry with it. An unknown ID or bytes the codec
// cannot read is an error.
func Decompress(codec int8, src []byte) ([]byte, error) {
	return decompress(codec, src)
}
