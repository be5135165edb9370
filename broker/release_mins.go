package broker

// releaseMinVersions are the lowest version of each API that kversion's
// table of a release gives, where it is above 0 (KIP-896 removed the
// oldest versions in 4.0; 4.1 brought JoinGroup v0-v1 back and released
// the share-group APIs from v1). kversion keeps these minimums private:
// TestReleaseMinVersions finds them through Versions.Equal for every API
// served and checks this table against them, printing the table it wants
// when they differ. Found at start, they would cost a copy of kversion's
// tables per API: 6 ms.
var releaseMinVersions = map[string]map[int16]int16{
	"4.0": {1: 4, 2: 1, 8: 2, 9: 1, 11: 2, 19: 2, 20: 1, 23: 2, 29: 1, 30: 1, 31: 1, 32: 1},
	"4.1": {1: 4, 2: 1, 8: 2, 9: 1, 19: 2, 20: 1, 23: 2, 29: 1, 30: 1, 31: 1, 32: 1, 76: 1, 77: 1, 78: 1, 79: 1},
	"4.2": {1: 4, 2: 1, 8: 2, 9: 1, 19: 2, 20: 1, 23: 2, 29: 1, 30: 1, 31: 1, 32: 1, 76: 1, 77: 1, 78: 1, 79: 1},
	"4.3": {1: 4, 2: 1, 8: 2, 9: 1, 19: 2, 20: 1, 23: 2, 29: 1, 30: 1, 31: 1, 32: 1, 76: 1, 77: 1, 78: 1, 79: 1},
	"4.4": {1: 4, 2: 1, 8: 2, 9: 1, 19: 2, 20: 1, 23: 2, 29: 1, 30: 1, 31: 1, 32: 1, 76: 1, 77: 1, 78: 1, 79: 1},
}
