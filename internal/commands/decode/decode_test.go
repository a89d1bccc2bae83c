package decode

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/output"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/clitest"
)

var ts = time.Date(2025, 3, 4, 5, 6, 7, 891e6, time.UTC)

// messages are the inputs of the golden tests, built with kmsg encoders (via kopcommit).
func messages() [][2][]byte {
	commit := kop.OffsetCommit{Group: "G", Topic: "persistent://public/default/topic-1", Partition: 3, Offset: 10900, Metadata: "m", CommitTime: ts}
	k1, v1 := kop.Encode(commit)
	tomb := commit
	tomb.Tombstone = true
	k2, v2 := kop.Encode(tomb)

	gk := (&kmsg.GroupMetadataKey{Version: 2, Group: "G"}).AppendTo(nil)
	gv := kmsg.GroupMetadataValue{Version: 1, ProtocolType: "consumer", Generation: 4, Protocol: kmsg.StringPtr("range"),
		Leader: kmsg.StringPtr("m-1"), Members: []kmsg.GroupMetadataValueMember{{
			MemberID: "m-1", ClientID: "c-1", ClientHost: "/10.0.0.1", RebalanceTimeoutMillis: 60000, SessionTimeoutMillis: 45000,
		}}}
	v3 := kop.EncodeBatch(gk, gv.AppendTo(nil), ts)

	v4 := bytes.Clone(v1)
	v4[16] = 1 // magic 1: not what KoP writes
	return [][2][]byte{{k1, v1}, {k2, v2}, {gk, v3}, {nil, nil}, {k1, v4}, {k1, v1[:30]}}
}

// inputFile renders messages as `dump --raw` lines, with a blank line and extra fields.
func inputFile() string {
	var b strings.Builder
	for i, m := range messages() {
		if i == 2 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, `{"cluster":"scus","messageId":"1:%d:7:-1","key":%q,"value":%q}`+"\n", i,
			base64.StdEncoding.EncodeToString(m[0]), base64.StdEncoding.EncodeToString(m[1]))
	}
	return b.String()
}

func TestNewCmdDecodeFlags(t *testing.T) {
	tests := []clitest.FlagCase[Options]{
		{Args: []string{"--input", "-"}, Want: Options{Input: "-", Format: output.NDJSON}},
		{Args: []string{"--input", "f.ndjson", "--strict", "-o", "json"}, TTY: true, Want: Options{Input: "f.ndjson", Strict: true, Format: output.JSON}},
		{Args: []string{"--key", "AA==", "--value", "AQ=="}, TTY: true, Want: Options{Key: "AA==", Value: "AQ==", KeySet: true, ValueSet: true, Format: output.Table}},
		{Args: []string{"--hex", "--value", "00ff"}, Want: Options{Value: "00ff", Hex: true, ValueSet: true, Format: output.NDJSON}},
		{Args: nil, Err: "give a message with --key and --value, or --input"},
		{Args: []string{"--input", "-", "--key", "AA=="}, Err: "--input cannot be combined"},
		{Args: []string{"--input", "-", "--hex"}, Err: "--hex applies to --key and --value"},
		{Args: []string{"--input", "-", "-o", "xml"}, Err: `invalid output format "xml"`},
		{Args: []string{"x"}, Err: `unexpected argument "x"`},
	}
	clitest.CheckFlags(t, NewCmdDecode, tests, func(got, want *Options) bool {
		return got.Format == want.Format && got.Input == want.Input && got.Key == want.Key && got.Value == want.Value &&
			got.Hex == want.Hex && got.Strict == want.Strict && got.KeySet == want.KeySet && got.ValueSet == want.ValueSet
	})
}

func run(t *testing.T, o *Options, stdin string) (out, errOut string, err error) {
	t.Helper()
	ios, in, stdout, stderr := iostreams.Test()
	in.WriteString(stdin)
	o.IO = ios
	err = decodeRun(o)
	return stdout.String(), stderr.String(), err
}

func TestDecodeInputGolden(t *testing.T) {
	for _, f := range []output.Format{output.NDJSON, output.JSON, output.YAML, output.Table} {
		out, errOut, err := run(t, &Options{Format: f, Input: "-"}, inputFile())
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		clitest.Golden(t, "testdata/input."+string(f)+".golden", []byte(out))
		if want := "decoded 6 messages, 6 records: 1 offset_commit, 1 offset_tombstone, 1 group_metadata, 1 placeholder, 2 undecodable\n"; errOut != want {
			t.Errorf("%s: stderr %q, want %q", f, errOut, want)
		}
	}
}

func TestDecodeInputFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.ndjson")
	if err := os.WriteFile(path, []byte(inputFile()), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, err := run(t, &Options{Format: output.NDJSON, Input: path}, "")
	if err != nil {
		t.Fatal(err)
	}
	clitest.Golden(t, "testdata/input.ndjson.golden", []byte(out))

	_, _, err = run(t, &Options{Format: output.NDJSON, Input: filepath.Join(t.TempDir(), "absent")}, "")
	if cmdutil.ExitCode(err) != 2 || !strings.Contains(err.Error(), "--input") {
		t.Errorf("absent file: %v", err)
	}
}

func TestDecodeStrict(t *testing.T) {
	out, errOut, err := run(t, &Options{Format: output.NDJSON, Input: "-", Strict: true}, inputFile())
	if cmdutil.ExitCode(err) != 1 || !strings.Contains(err.Error(), "2 undecodable") {
		t.Errorf("strict: %v", err)
	}
	if strings.Count(out, "\n") != 6 || !strings.Contains(errOut, "2 undecodable") {
		t.Errorf("strict must still print everything: %q %q", out, errOut)
	}
	// Nothing undecodable: exit 0 and no summary when stderr is not a terminal.
	k, v := kop.Encode(kop.OffsetCommit{Group: "G", Topic: "t", Offset: 1, CommitTime: ts})
	line := fmt.Sprintf(`{"key":%q,"value":%q}`, base64.StdEncoding.EncodeToString(k), base64.StdEncoding.EncodeToString(v))
	_, errOut, err = run(t, &Options{Format: output.NDJSON, Input: "-", Strict: true}, line)
	if err != nil || errOut != "" {
		t.Errorf("clean input: %v %q", err, errOut)
	}
}

func TestDecodeMalformedInput(t *testing.T) {
	good := strings.SplitN(inputFile(), "\n", 2)[0]
	tests := []struct {
		in, err string
	}{
		{good + "\nnot json\n", "stdin: line 2: not a JSON object"},
		{good + "\n" + good + "\n{\"key\": 1}\n", "stdin: line 3: not a JSON object with string fields"},
		{"{\"value\":\"%%%\"}", "stdin: line 1: field \"value\": not valid base64"},
		{"\n\n{\"key\":\"A\"}", "stdin: line 3: field \"key\": not valid base64"},
		{"[1,2]", "stdin: line 1: not a JSON object"},
	}
	for _, tt := range tests {
		_, _, err := run(t, &Options{Format: output.NDJSON, Input: "-"}, tt.in)
		if cmdutil.ExitCode(err) != 2 || err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%q: %v (exit %d), want %q", tt.in, err, cmdutil.ExitCode(err), tt.err)
		}
	}
}

func TestDecodeFlagsInput(t *testing.T) {
	m := messages()[0]
	b64 := base64.StdEncoding.EncodeToString
	out, _, err := run(t, &Options{Format: output.NDJSON, Key: b64(m[0]), Value: b64(m[1]), KeySet: true, ValueSet: true}, "")
	if err != nil {
		t.Fatal(err)
	}
	outHex, _, err := run(t, &Options{Format: output.NDJSON, Key: hex.EncodeToString(m[0]), Value: hex.EncodeToString(m[1]), Hex: true}, "")
	if err != nil || out != outHex {
		t.Errorf("hex differs from base64: %v\n%s\n%s", err, out, outHex)
	}
	clitest.Golden(t, "testdata/flags.ndjson.golden", []byte(out))

	// URL-safe base64 without padding is accepted too.
	outURL, _, err := run(t, &Options{Format: output.NDJSON, Value: base64.RawURLEncoding.EncodeToString(m[1])}, "")
	if err != nil || outURL != out {
		t.Errorf("url base64: %v %s", err, outURL)
	}
	// Only a key: an empty value is a placeholder.
	out, _, err = run(t, &Options{Format: output.NDJSON, Key: b64(m[0])}, "")
	if err != nil || out != `{"line":1,"kind":"placeholder"}`+"\n" {
		t.Errorf("placeholder: %v %s", err, out)
	}
	for _, o := range []*Options{{Value: "!!"}, {Value: "zz", Hex: true}} {
		o.Format = output.NDJSON
		if _, _, err := run(t, o, ""); cmdutil.ExitCode(err) != 2 || !strings.Contains(err.Error(), "--value") {
			t.Errorf("%+v: %v", o, err)
		}
	}
}

func TestDecodeOpenHook(t *testing.T) {
	o := &Options{Format: output.NDJSON, Input: "x", Open: func(string) (io.ReadCloser, error) {
		return io.NopCloser(strings.NewReader(inputFile())), nil
	}}
	out, _, err := run(t, o, "")
	if err != nil || strings.Count(out, "\n") != 6 {
		t.Errorf("%v %q", err, out)
	}
}
