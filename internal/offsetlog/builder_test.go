package offsetlog

import "github.com/kop-offsets/kop-offsets/internal/offsetlog/offsetlogtest"

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

func ptr[T any](v T) *T { return &v }
