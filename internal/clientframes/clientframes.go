// Package clientframes loads the request frames captured from real Kafka
// clients (testdata/frames/<client>/<api>-v<N>.hex), which seed the wire
// fuzz targets and the broker's mutation tests. It is for tests only.
package clientframes

import (
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Load reads every captured frame under root (the testdata/frames folder),
// size prefix included, keyed by "<client>/<file>".
func Load(root string) (map[string][]byte, error) {
	paths, err := filepath.Glob(filepath.Join(root, "*", "*.hex"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no captured frames under %s", root)
	}
	frames := make(map[string][]byte, len(paths))
	for _, path := range paths {
		text, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		frame, err := hex.DecodeString(strings.Join(strings.Fields(string(text)), ""))
		if err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		frames[filepath.Join(filepath.Base(filepath.Dir(path)), filepath.Base(path))] = frame
	}
	return frames, nil
}
