package offsetlog

import "flag"

var update = flag.Bool("update", false, "rewrite golden files and fuzz seeds under testdata")
