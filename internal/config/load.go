package config

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// EnvConfig names the environment variable that points at the config file.
const EnvConfig = "KOP_OFFSETS_CONFIG"

// DefaultPath returns $XDG_CONFIG_HOME/kop-offsets/config.yaml, falling back to
// ~/.config/kop-offsets/config.yaml.
func DefaultPath(getenv func(string) string) string {
	if getenv == nil {
		getenv = os.Getenv
	}
	dir := getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home := getenv("HOME")
		if home == "" {
			home, _ = os.UserHomeDir()
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "kop-offsets", "config.yaml")
}

// Locate returns the path of the config file to read: explicit (--config) when set, else
// $KOP_OFFSETS_CONFIG, else DefaultPath.
func Locate(explicit string, getenv func(string) string) string {
	if getenv == nil {
		getenv = os.Getenv
	}
	if explicit != "" {
		return explicit
	}
	if p := getenv(EnvConfig); p != "" {
		return p
	}
	return DefaultPath(getenv)
}

// Load reads, parses, defaults and validates the file at path. Every error is an *Error or
// Errors (each wrapping ErrInvalid; a missing file also ErrNotFound).
func Load(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &Error{Path: path, Msg: "file not found (use --config, " + EnvConfig +
				", or --admin-url/--service-url/--bootstrap for one ad-hoc cluster)", Err: ErrNotFound}
		}
		return nil, &Error{Path: path, Msg: "cannot read file", Err: err}
	}
	return Parse(b, path)
}

// Parse parses, defaults and validates a config document; path is used in messages.
// Unknown fields are errors.
func Parse(data []byte, path string) (*Config, error) {
	var cfg Config
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &Error{Path: path, Msg: "file is empty: it needs a clusters list"}
		}
		return nil, yamlError(data, path, err)
	}
	cfg.Path = path
	for i := range cfg.Clusters {
		cfg.Clusters[i].applyDefaults()
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &cfg, nil
}

var (
	yamlLineRE    = regexp.MustCompile(`^line (\d+): (.*)$`)
	yamlUnknownRE = regexp.MustCompile(`^field (\S+) not found in type \S+$`)
)

// yamlError turns a yaml error into Errors that name the cluster each problem is in.
func yamlError(data []byte, path string, err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return &Error{Path: path, Msg: syntaxLine(strings.TrimPrefix(err.Error(), "yaml: ")), Err: err}
	}
	spans := clusterSpans(data)
	var es Errors
	for _, m := range te.Errors {
		e := &Error{Path: path, Msg: m}
		if sm := yamlLineRE.FindStringSubmatch(m); sm != nil {
			line, _ := strconv.Atoi(sm[1])
			msg := sm[2]
			if um := yamlUnknownRE.FindStringSubmatch(msg); um != nil {
				msg = fmt.Sprintf("unknown field %q", um[1])
			}
			e.Msg = fmt.Sprintf("line %d: %s", line, msg)
			for _, s := range spans {
				if line >= s.line {
					e.Cluster = s.name
				}
			}
		}
		es = append(es, e)
	}
	return es
}

// yamlParserProblems are the problems yaml.v3's parser (not its scanner) reports. It numbers
// their lines from 0 (yaml.v3 decode.go, parser.fail: only scanner errors get the +1), so
// "line 3" is the fourth line: a flow sequence missing a comma on line 4 was reported on
// line 3. Where the parser names the enclosing construct's start (a flow mapping not on the
// first line), that start is the line it gives: the problem may sit further down.
var yamlParserProblems = map[string]bool{
	"did not find expected ',' or ']'": true, "did not find expected ',' or '}'": true,
	"did not find expected '-' indicator": true, "did not find expected <document start>": true,
	"did not find expected key": true, "did not find expected node content": true,
}

// syntaxLine is yaml's syntax error msg with a parser problem's line counted from 1.
func syntaxLine(msg string) string {
	sm := yamlLineRE.FindStringSubmatch(msg)
	if len(sm) != 3 || !yamlParserProblems[sm[2]] {
		return msg
	}
	line, _ := strconv.Atoi(sm[1])
	return fmt.Sprintf("line %d: %s", line+1, sm[2])
}

type span struct {
	line int
	name string
}

// clusterSpans returns the first line and the name (or "#N") of each cluster entry.
func clusterSpans(data []byte) []span {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
		return nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil
	}
	var spans []span
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value != "clusters" || root.Content[i+1].Kind != yaml.SequenceNode {
			continue
		}
		for j, item := range root.Content[i+1].Content {
			name := "#" + strconv.Itoa(j+1)
			if item.Kind == yaml.MappingNode {
				for k := 0; k+1 < len(item.Content); k += 2 {
					if item.Content[k].Value == "name" && item.Content[k+1].Value != "" {
						name = item.Content[k+1].Value
					}
				}
			}
			spans = append(spans, span{line: item.Line, name: name})
		}
	}
	return spans
}

// AdHoc returns the config defined by --admin-url, --service-url and --bootstrap: one
// cluster with the default tenant and namespaces and no authentication, named after what
// the user typed (adHocName), so that every message about it names what they know.
func AdHoc(adminURL, serviceURL string, bootstrap []string) (*Config, error) {
	var bs []string
	for _, b := range bootstrap {
		for _, p := range strings.Split(b, ",") {
			if p = strings.TrimSpace(p); p != "" {
				bs = append(bs, p)
			}
		}
	}
	cfg := &Config{adHoc: true, Clusters: []Cluster{{
		Name: adHocName(adminURL, serviceURL, bs), AdminURL: adminURL, ServiceURL: serviceURL, KafkaBootstrap: bs,
		FromFlags: true,
	}}}
	cfg.Clusters[0].applyDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// adHocName is the host:port of the first endpoint given (the admin URL, else the service
// URL, else the first bootstrap server), or the value as typed when it has no host.
func adHocName(adminURL, serviceURL string, bootstrap []string) string {
	typed := cmp.Or(adminURL, serviceURL)
	if typed == "" && len(bootstrap) > 0 {
		return bootstrap[0]
	}
	if u, err := url.Parse(typed); err == nil && u.Host != "" {
		return u.Host
	}
	return cmp.Or(typed, AdHocClusterName)
}

// Marshal returns the config as YAML in the file format (for tests and `config view`).
func (c *Config) Marshal() ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(c); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
