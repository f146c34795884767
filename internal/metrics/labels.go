package metrics

import dto "github.com/prometheus/client_model/go"

// HasLabels reports whether a scraped series carries every label of want
// with its value (other labels may differ).
func HasLabels(m *dto.Metric, want map[string]string) bool {
	found := 0
	for _, l := range m.GetLabel() {
		if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
			found++
		}
	}
	return found == len(want)
}
