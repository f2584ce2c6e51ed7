package scenario

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"kvsim/cluster"
	"kvsim/internal/golden"
	"kvsim/tierkind"
	"kvsim/trace"
)

// The docs' tables of routers, trace formats and tier kinds are rendered
// from the registries (each entry's own file says what its row says): a
// new router, format or kind gets its row from go test ./scenario -run
// TestDocTables -update.
func TestDocTables(t *testing.T) {
	const marker = "<!-- generated from the %s registry: go test ./scenario -run TestDocTables -update -->"
	golden.Region(t, "../docs/routers.md", fmt.Sprintf(marker, "router"), routerTable())
	golden.Region(t, "../docs/traces.md", fmt.Sprintf(marker, "trace format"), formatTable())
	golden.Region(t, "../README.md", fmt.Sprintf(marker, "tier kind"), kindTable())

	// doc.go's copy of the tier defaults, as a Go comment.
	b, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	const start, end = "// Tier defaults per kind (background document, section 1; KindDefaults):\n//\n", "//\n// Link defaults"
	from := strings.Index(text, start)
	to := strings.Index(text, end)
	if from < 0 || to < from {
		t.Fatalf("doc.go: no %q ... %q", start, end)
	}
	from += len(start)
	golden.Check(t, "doc.go", []byte(text[:from]+kindComment()+text[to:]))
}

func routerTable() string {
	var b strings.Builder
	b.WriteString("| router | chooses | reads from the View | state of its own | its `[cluster]` keys (default) |\n|---|---|---|---|---|\n")
	for _, r := range cluster.Routers() {
		keys := make([]string, len(r.Keys))
		for i, k := range r.Keys {
			keys[i] = fmt.Sprintf("`%s` (%s)", k.Name, defaultText(&r.Keys[i]))
		}
		if len(keys) == 0 {
			keys = []string{"none"}
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", r.Name, r.Brief, r.Reads, r.State, strings.Join(keys, ", "))
	}
	return b.String()
}

func formatTable() string {
	def := sectionNamed("workload").field("format").Default
	var b strings.Builder
	b.WriteString("| format | file | timestamps | block ids | sessions |\n|---|---|---|---|---|\n")
	for _, f := range trace.FormatSpecs() {
		name := "`" + f.Name + "`"
		if f.Name == def {
			name += " (default)"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", name, f.Row.File, f.Row.Times, f.Row.IDs, f.Row.Sessions)
	}
	return b.String()
}

// kindRows are the tier kinds' rows: name, capacity, bandwidth, latency,
// $/GB, own keys, what it is.
func kindRows() [][]string {
	var rows [][]string
	for _, k := range tierkind.Specs() {
		keys := make([]string, len(k.Keys))
		for i, key := range k.Keys {
			keys[i] = "`" + key.Name + "`"
		}
		rows = append(rows, []string{k.Name, sizeText(k.Capacity), FormatBandwidth(k.Bandwidth), FormatDuration(k.Latency),
			strconv.FormatFloat(k.CostPerGB, 'g', -1, 64), strings.Join(keys, ", "), k.Brief})
	}
	return rows
}

func kindTable() string {
	var b strings.Builder
	b.WriteString("| kind | capacity | bandwidth | latency | $/GB | its own keys | what it is |\n|---|---|---|---|---|---|---|\n")
	for _, r := range kindRows() {
		if r[5] == "" {
			r[5] = "none"
		}
		fmt.Fprintf(&b, "| `%s` | %s |\n", r[0], strings.Join(r[1:], " | "))
	}
	return b.String()
}

func kindComment() string {
	var b strings.Builder
	fmt.Fprintf(&b, "//\t%-12s %-10s %-10s %-8s %s\n", "kind", "capacity", "bandwidth", "latency", "$/GB")
	for _, r := range kindRows() {
		fmt.Fprintf(&b, "//\t%-12s %-10s %-10s %-8s %s\n", r[0], r[1], r[2], r[3], r[4])
	}
	return b.String()
}

// sizeText writes a capacity as it is quoted: binary units for a whole
// number of GiB, decimal ones (a drive's "3.84 TB") otherwise.
func sizeText(n int64) string {
	if n%(1<<30) == 0 {
		return FormatBytes(n)
	}
	units := []string{"B", "KB", "MB", "GB", "TB", "PB", "EB"}
	v, i := float64(n), 0
	for v >= 1000 && i < len(units)-1 {
		v /= 1000
		i++
	}
	return strconv.FormatFloat(v, 'f', -1, 64) + " " + units[i]
}
