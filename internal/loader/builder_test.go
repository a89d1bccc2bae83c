package loader

import (
	"encoding/json"
	"strconv"
	"testing"
)

var itoa = strconv.Itoa

// batchOffCRC is where a v2 record batch keeps its CRC.
const batchOffCRC = 17

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
