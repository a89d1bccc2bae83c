package loader

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/offsetlog/offsetlogtest"
)

// The builders of offsetlogtest under the names these tests use.
type (
	kv        = offsetlogtest.KV
	batchOpts = offsetlogtest.BatchOpts
)

const codecSnappyRaw = offsetlogtest.CodecSnappyRaw

var (
	offsetKeyBytes   = offsetlogtest.OffsetKey
	groupKeyBytes    = offsetlogtest.GroupKey
	offsetValueBytes = offsetlogtest.OffsetValue
	controlKey       = offsetlogtest.ControlKey
	controlValue     = offsetlogtest.ControlValue
	groupValueBytes  = offsetlogtest.GroupValue
	buildBatch       = offsetlogtest.BuildBatch
	commitMsg        = offsetlogtest.CommitMsg
	offsetRec        = offsetlogtest.OffsetRec
	fuzzSeeds        = offsetlogtest.Seeds
	fixCRC           = offsetlogtest.FixCRC
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
