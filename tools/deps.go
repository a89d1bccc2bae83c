//go:build tools

// Package tools pins the module's dependencies before the code that uses them lands.
package tools

import (
	_ "github.com/apache/pulsar-client-go/pulsar"
	_ "github.com/apache/pulsar-client-go/pulsaradmin"
	_ "github.com/klauspost/compress/zstd"
	_ "github.com/olekukonko/tablewriter"
	_ "github.com/pierrec/lz4/v4"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/spf13/cobra"
	_ "github.com/spf13/cobra/doc"
	_ "github.com/twmb/franz-go/pkg/kadm"
	_ "github.com/twmb/franz-go/pkg/kfake"
	_ "github.com/twmb/franz-go/pkg/kgo"
	_ "github.com/twmb/franz-go/pkg/kmsg"
	_ "github.com/twmb/franz-go/pkg/sasl/plain"
	_ "go.yaml.in/yaml/v3"
	_ "golang.org/x/term"
)
