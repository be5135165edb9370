//go:build !race

package consoletest

// raceOn is true under -race, which slows the broker's JSON about tenfold.
const raceOn = false
