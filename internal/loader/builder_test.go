package loader

import (
	"strconv"

	"github.com/kop-offsets/kop-offsets/internal/offsetlog/offsetlogtest"
)

var itoa = strconv.Itoa

// batchOffCRC is where a v2 record batch keeps its CRC.
const batchOffCRC = 17

var mustJSON = offsetlogtest.MustJSON
