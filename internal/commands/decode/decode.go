// Package decode implements `kop-offsets decode`: decode offsets-topic messages given on
// the command line or in a file, offline.
package decode

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/commands/recordio"
	"github.com/kop-offsets/kop-offsets/internal/explain"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/offsetlog"
	"github.com/kop-offsets/kop-offsets/internal/output"
)

// Options of `decode`.
type Options struct {
	IO     *iostreams.IOStreams
	Format output.Format

	Key, Value       string // --key, --value
	KeySet, ValueSet bool
	Hex              bool   // --hex: --key and --value are hex, not base64
	Input            string // --input FILE or "-"
	Strict           bool

	// Open opens --input (tests replace it); "-" is IO.In.
	Open func(name string) (io.ReadCloser, error)
}

// Record is one decoded record with the input line it came from.
type Record struct {
	Line int `json:"line"`
	offsetlog.Record
}

// NewCmdDecode returns `decode`. runF replaces the run function in tests.
func NewCmdDecode(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use:     "decode (--key B64 --value B64 [--hex] | --input FILE|-)",
		Short:   "Decode offsets-topic messages offline",
		Long:    strings.TrimSpace(decodeLong),
		Example: cmdutil.Examples(decodeExample),
		Args:    cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.KeySet = cmd.Flags().Changed("key")
			opts.ValueSet = cmd.Flags().Changed("value")
			if err := cmdutil.MutuallyExclusive("--input cannot be combined with --key or --value",
				opts.Input != "", opts.KeySet || opts.ValueSet); err != nil {
				return err
			}
			if opts.Input == "" && !opts.KeySet && !opts.ValueSet {
				return cmdutil.FlagErrorf("give a message with --key and --value, or --input FILE|-")
			}
			if opts.Hex && opts.Input != "" {
				return cmdutil.FlagErrorf("--hex applies to --key and --value; --input lines are base64, as 'dump --raw' writes them")
			}
			var err error
			if opts.Format, err = f.OutputFormat(output.StreamingSpec); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return decodeRun(opts)
		},
	}
	cmdutil.SetOutputFormats(cmd, output.StreamingSpec)
	fl := cmd.Flags()
	fl.StringVar(&opts.Key, "key", "", "the message key, base64 (hex with --hex)")
	fl.StringVar(&opts.Value, "value", "", "the message value (a Kafka record batch), base64 (hex with --hex)")
	fl.BoolVar(&opts.Hex, "hex", false, "--key and --value are hex")
	fl.StringVar(&opts.Input, "input", "", "read messages from FILE (- for stdin): one JSON object per line with base64 \"key\" and \"value\"")
	fl.BoolVar(&opts.Strict, "strict", false, "exit 1 when a record is undecodable")
	_ = cmd.MarkFlagFilename("input", "ndjson", "json", "jsonl")
	return cmd
}

// Columns of the table.
var Columns = append([]recordio.Column{{Header: "LINE"}}, recordio.RecordColumns...)

func row(v any) []string {
	r := v.(*Record)
	return append([]string{fmt.Sprint(r.Line)}, recordio.RecordCells(&r.Record)...)
}

func decodeRun(opts *Options) error {
	sink := recordio.NewSink(opts.IO.Out, opts.Format, opts.IO.IsStdoutTTY(), Columns, row)
	var sum recordio.Summary
	emit := func(line int, key, value []byte) error {
		sum.Messages++
		recs, _ := offsetlog.Decode(key, value)
		for i := range recs {
			sum.Add(recs[i].Kind)
			if err := sink.Write(&Record{Line: line, Record: recs[i]}); err != nil {
				return err
			}
		}
		return nil
	}

	var err error
	if opts.Input != "" {
		err = decodeInput(opts, emit)
	} else {
		err = decodeFlags(opts, emit)
	}
	read := err == nil // the input read to its end: the summary is shown
	if read && opts.Strict && sum.Undecodable() > 0 {
		err = cmdutil.DriftError(fmt.Errorf("--strict: %d undecodable records", sum.Undecodable()))
	}
	var problems []explain.Problem // the json document's errors
	if err != nil {
		problems = []explain.Problem{explain.ProblemOf(err)}
	}
	if cerr := sink.Close(problems); err == nil {
		err = cerr
	}
	if read && (sum.Undecodable() > 0 || opts.IO.IsStderrTTY()) {
		fmt.Fprintf(opts.IO.ErrOut, "decoded %s\n", sum.String())
	}
	return err
}

func decodeFlags(opts *Options, emit func(int, []byte, []byte) error) error {
	parse := func(flag, s string) ([]byte, error) {
		s = strings.TrimSpace(s)
		var b []byte
		var err error
		if opts.Hex {
			b, err = hex.DecodeString(strings.TrimPrefix(strings.ReplaceAll(s, " ", ""), "0x"))
		} else {
			b, err = decodeBase64(s)
		}
		if err != nil {
			enc := "base64"
			if opts.Hex {
				enc = "hex"
			}
			return nil, cmdutil.UsageErrorf("--%s: not valid %s: %v", flag, enc, err)
		}
		return b, nil
	}
	key, err := parse("key", opts.Key)
	if err != nil {
		return err
	}
	value, err := parse("value", opts.Value)
	if err != nil {
		return err
	}
	return emit(1, key, value)
}

// decodeBase64 accepts standard and URL-safe base64, padded or not.
func decodeBase64(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	_, err := base64.StdEncoding.DecodeString(s)
	return nil, err
}

// inputLine is what decode takes from a line; "key" and "value" may be null or absent.
type inputLine struct {
	Key   *string `json:"key"`
	Value *string `json:"value"`
}

func decodeInput(opts *Options, emit func(int, []byte, []byte) error) error {
	open := opts.Open
	if open == nil {
		open = func(name string) (io.ReadCloser, error) { return os.Open(name) }
	}
	var r io.Reader
	name := opts.Input
	if name == "-" {
		r, name = opts.IO.In, "stdin"
	} else {
		f, err := open(opts.Input)
		if err != nil {
			return cmdutil.UsageErrorf("--input: %v", err)
		}
		defer func() { _ = f.Close() }()
		r = f
	}
	br := bufio.NewReaderSize(r, 1<<16)
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if len(b) > 0 {
			if perr := decodeLine(name, line, b, emit); perr != nil {
				return perr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return cmdutil.UsageErrorf("%s: line %d: read: %v", name, line, err)
		}
	}
}

func decodeLine(name string, line int, b []byte, emit func(int, []byte, []byte) error) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil
	}
	var in inputLine
	if b[0] != '{' {
		return cmdutil.UsageErrorf("%s: line %d: not a JSON object", name, line)
	}
	if err := json.Unmarshal(b, &in); err != nil {
		return cmdutil.UsageErrorf("%s: line %d: not a JSON object with string fields \"key\" and \"value\": %v", name, line, err)
	}
	var key, value []byte
	var err error
	if in.Key != nil {
		if key, err = base64.StdEncoding.DecodeString(*in.Key); err != nil {
			return cmdutil.UsageErrorf("%s: line %d: field \"key\": not valid base64: %v", name, line, err)
		}
	}
	if in.Value != nil {
		if value, err = base64.StdEncoding.DecodeString(*in.Value); err != nil {
			return cmdutil.UsageErrorf("%s: line %d: field \"value\": not valid base64: %v", name, line, err)
		}
	}
	return emit(line, key, value)
}

// decodeLong is the long help of decode.
const decodeLong = `
Decode messages of KoP's offsets topic (persistent://<tenant>/__kafka/__consumer_offsets)
without contacting any cluster. Reads nothing but the arguments or the input file, writes
nothing but stdout and stderr.

A message is the Kafka key (KoP's Pulsar message key) and the value, a Kafka record batch
(magic 2, any compression codec). The value alone decides what the message holds: the key is
accepted for completeness but the same key is inside the batch. An empty value is KoP's
placeholder.

Input:
  --key B64 --value B64   one message, base64 (or hex with --hex); a missing --value is an
                          empty value (a placeholder)
  --input FILE|-          one JSON object per line with base64 "key" and "value" fields;
                          other fields are ignored, so the output of 'dump --raw' decodes
                          again. Blank lines are skipped.

Output: one record per line (-o ndjson, the default when stdout is not a terminal), a json
array, a yaml sequence, or a table; records are written as they are decoded. Each record has
the fields of the JSON contract (kind, group, topic, partition, offset, ...) and "line", the
1-based input line (1 for --key/--value). A message that cannot be decoded, or a part of
one, becomes a record of kind "undecodable" with "error".

A summary goes to stderr when some records were undecodable (always on a terminal).`

// decodeExample is the examples of decode.
const decodeExample = `
  # one message as base64: group G commits offset 10900 of topic-1 partition 0
  kop-offsets decode \
      --key AAEAAUcAI3BlcnNpc3RlbnQ6Ly9wdWJsaWMvZGVmYXVsdC90b3BpYy0xAAAAAA== \
      --value AAAAAAAAAAAAAACD/////wKtYFlQAAAAAAAAAAABlV+MBhgAAAGVX4wGGP//////////////////AAAAAaABAAAAXAABAAFHACNwZXJzaXN0ZW50Oi8vcHVibGljL2RlZmF1bHQvdG9waWMtMQAAAAA4AAEAAAAAAAAqlAAAAAABlV+MBhj//////////wA=

  # the value alone, as hex (the key is inside the batch), as a table
  kop-offsets decode -o table --hex --value 000000000000000000000083ffffffff02ad605950000000000000000001955f8c0618000001955f8c0618ffffffffffffffffffffffffffff00000001a0010000005c0001000147002370657273697374656e743a2f2f7075626c69632f64656661756c742f746f7069632d31000000003800010000000000002a940000000001955f8c0618ffffffffffffffff00

  # decode a raw dump again, offline, and keep only the undecodable records
  kop-offsets dump --cluster scus --raw > scus.ndjson
  kop-offsets decode --input scus.ndjson | jq 'select(.kind == "undecodable")'

  # fail a CI job when anything cannot be decoded
  kop-offsets dump --raw --partition 3 | kop-offsets decode --input - --strict > /dev/null`
