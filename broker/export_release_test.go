package broker

// HandlerRanges returns the versions each handler serves, by API key,
// whatever the release: the dispatch table the release cuts.
func HandlerRanges() map[int16][2]int16 {
	out := make(map[int16][2]int16)
	for _, a := range apis {
		if a != nil {
			out[a.key] = [2]int16{a.minVersion, a.maxVersion}
		}
	}
	return out
}
