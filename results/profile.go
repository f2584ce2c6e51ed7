package results

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"kvsim/internal/tomlguard"
)

// Profile is a hardware profile (profile.toml) as `kvsim calibrate` writes
// it: measured link figures between tier kinds on one machine. Figures
// keep their units as written ("12500MB/s", "3.2us"); the scenario package
// parses them.
type Profile struct {
	BlockBytes   int    // the block size measured with (a comment in the file; 0 if absent)
	Machine      string // host name
	Date         string
	Notes        string
	Links        []ProfileLink
	Measurements map[string]float64 // extra figures, for people; kvsim reads none of them
}

// ProfileLink is one measured connection between two tier kinds; the
// reverse figures may be empty (the same as the forward ones).
type ProfileLink struct {
	From             string `toml:"from"`
	To               string `toml:"to"`
	Bandwidth        string `toml:"bandwidth"`
	ReverseBandwidth string `toml:"reverse_bandwidth"`
	Latency          string `toml:"latency"`
	ReverseLatency   string `toml:"reverse_latency"`
}

const profileHead = "# kvsim hardware profile, written by kvsim calibrate for %d-byte blocks.\n"

// FormatProfile is p as profile.toml.
func FormatProfile(p *Profile) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, profileHead, p.BlockBytes)
	fmt.Fprintf(&b, "# Use it with `profile = \"FILE\"` in a scenario, or `kvsim replay --profile FILE`.\n")
	fmt.Fprintf(&b, "machine = %q\ndate = %q\n", p.Machine, p.Date)
	fmt.Fprintf(&b, "notes = %q\n\n", p.Notes)
	for _, l := range p.Links {
		fmt.Fprintf(&b, "[[link]]\nfrom = %q\nto = %q\nbandwidth = %q\nreverse_bandwidth = %q\nlatency = %q\nreverse_latency = %q\n\n",
			l.From, l.To, l.Bandwidth, l.ReverseBandwidth, l.Latency, l.ReverseLatency)
	}
	if len(p.Measurements) > 0 {
		b.WriteString("[measurements]\n")
		keys := make([]string, 0, len(p.Measurements))
		for k := range p.Measurements {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "%q = %g\n", k, p.Measurements[k])
		}
	}
	return []byte(b.String())
}

// WriteProfile writes p to path atomically.
func WriteProfile(path string, p *Profile) error {
	return WriteFileAtomic(path, FormatProfile(p))
}

// ReadProfile reads a hardware profile. A file that cannot be read gives
// the os error; anything else an error saying what is wrong (neither
// names the path: callers do).
func ReadProfile(path string) (*Profile, error) {
	// A profile is a small regular file; refuse anything else (a device
	// could block or never end).
	if fi, err := os.Stat(path); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() || fi.Size() > tomlguard.MaxBytes {
		return nil, errors.New("not a regular file of at most 1 MiB")
	}
	data, err := tomlguard.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if e := tomlguard.Check(data); e != nil { // before the TOML library: its cost is quadratic in nesting
		return nil, e
	}
	var f struct {
		Machine      string         `toml:"machine"`
		Date         string         `toml:"date"`
		Notes        string         `toml:"notes"`
		Measurements map[string]any `toml:"measurements"`
		Link         []ProfileLink  `toml:"link"`
	}
	md, err := toml.Decode(string(data), &f)
	if err != nil {
		return nil, err
	}
	if und := md.Undecoded(); len(und) > 0 && und[0].String() != "" {
		for _, k := range und {
			if len(k) > 0 && k[0] != "measurements" {
				return nil, fmt.Errorf("unknown key %q", k.String())
			}
		}
	}
	p := &Profile{Machine: f.Machine, Date: f.Date, Notes: f.Notes, Links: f.Link}
	fmt.Sscanf(string(data), profileHead, &p.BlockBytes)
	for k, v := range f.Measurements {
		var x float64
		switch v := v.(type) {
		case int64:
			x = float64(v)
		case float64:
			x = v
		default:
			continue // not a figure: kept for people, not read
		}
		if p.Measurements == nil {
			p.Measurements = map[string]float64{}
		}
		p.Measurements[k] = x
	}
	return p, nil
}
