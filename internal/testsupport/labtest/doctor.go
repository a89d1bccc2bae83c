package labtest

import (
	"encoding/json"
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/doctor"
)

// DoctorReport is what `doctor -o json` prints.
type DoctorReport struct {
	Clusters []doctor.ClusterReport `json:"clusters"`
	Findings []doctor.Finding       `json:"findings"`
}

// ParseDoctor reads doctor's JSON output.
func ParseDoctor(t testing.TB, out []byte) DoctorReport {
	t.Helper()
	var res DoctorReport
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("doctor's JSON: %v\n%s", err, out)
	}
	return res
}

// BrokersHealthy wants every broker doctor read reachable, with KoP and a version, every KoP
// listener answering, and no broker-level finding above info (lab names the lab in errors).
func BrokersHealthy(t testing.TB, res DoctorReport, lab string) {
	t.Helper()
	for _, c := range res.Clusters {
		for _, b := range c.Brokers {
			if !b.Reachable || b.KoP == nil || !*b.KoP || b.Version == "" {
				t.Errorf("%s broker %s: %+v", c.Name, b.ID, b)
			}
		}
		for _, kl := range c.KafkaListeners {
			if kl.Error != "" {
				t.Errorf("%s: KoP listener %+v", c.Name, kl)
			}
		}
	}
	for _, f := range res.Findings {
		switch f.Check {
		case doctor.CheckBrokers, doctor.CheckBrokerKoP, doctor.CheckBrokerSettings, doctor.CheckKoPListener:
			if f.Severity != doctor.SeverityInfo {
				t.Errorf("broker-level finding on %s: %+v", lab, f)
			}
		}
	}
}
