package scenario

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"kvsim/internal/tomlguard"
	"kvsim/results"
)

// Profile is a hardware profile written by `kvsim calibrate`: measured
// link figures between tier kinds on one machine. A scenario names it with
// the top-level key `profile`; its figures then replace the default link
// figures for those kinds (keys given in a [[link]] still win).
type Profile struct {
	Path  string
	Links []ProfileLink
}

// ProfileLink is one measured connection between two tier kinds.
type ProfileLink struct {
	From, To         string  // tier kinds
	Bandwidth        float64 // bytes/s, From -> To
	ReverseBandwidth float64 // bytes/s, To -> From
	Latency          int64   // ns per transfer, From -> To
	ReverseLatency   int64   // ns per transfer, To -> From
}

// LoadProfile reads a hardware profile (results.ReadProfile) and checks
// its kinds and figures.
func LoadProfile(path string) (*Profile, error) {
	f, err := results.ReadProfile(path)
	if err != nil {
		if pe := (*os.PathError)(nil); errors.As(err, &pe) {
			return nil, &Error{Path: path, Msg: "profile: " + errText(err), Err: err}
		}
		if ge := (*tomlguard.Error)(nil); errors.As(err, &ge) {
			return nil, &Error{Path: path, Line: ge.Line, Msg: "profile: " + ge.Msg, Err: err}
		}
		return nil, &Error{Path: path, Msg: "profile: " + err.Error()}
	}
	p := &Profile{Path: path}
	for i, l := range f.Links {
		at := func(key string, err error) error {
			return &Error{Path: path, Msg: fmt.Sprintf("profile: link %d: %s: %v", i+1, key, err)}
		}
		if _, ok := KindDefaults(l.From); !ok {
			return nil, at("from", fmt.Errorf("unknown tier kind %q", l.From))
		}
		if _, ok := KindDefaults(l.To); !ok {
			return nil, at("to", fmt.Errorf("unknown tier kind %q", l.To))
		}
		pl := ProfileLink{From: l.From, To: l.To}
		if pl.Bandwidth, err = ParseBandwidth(l.Bandwidth); err != nil || pl.Bandwidth <= 0 {
			return nil, at("bandwidth", fmt.Errorf("want a positive bandwidth, got %q", l.Bandwidth))
		}
		pl.ReverseBandwidth = pl.Bandwidth
		if l.ReverseBandwidth != "" {
			if pl.ReverseBandwidth, err = ParseBandwidth(l.ReverseBandwidth); err != nil || pl.ReverseBandwidth <= 0 {
				return nil, at("reverse_bandwidth", fmt.Errorf("want a positive bandwidth, got %q", l.ReverseBandwidth))
			}
		}
		if l.Latency != "" {
			if pl.Latency, err = ParseDuration(l.Latency); err != nil || pl.Latency < 0 {
				return nil, at("latency", fmt.Errorf("want a duration >= 0, got %q", l.Latency))
			}
		}
		pl.ReverseLatency = pl.Latency
		if l.ReverseLatency != "" {
			if pl.ReverseLatency, err = ParseDuration(l.ReverseLatency); err != nil || pl.ReverseLatency < 0 {
				return nil, at("reverse_latency", fmt.Errorf("want a duration >= 0, got %q", l.ReverseLatency))
			}
		}
		p.Links = append(p.Links, pl)
	}
	return p, nil
}

func errText(err error) string {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err.Error()
	}
	return err.Error()
}

// lookup returns the profile's figures for a link from kind a to kind b.
func (p *Profile) lookup(a, b string) (ProfileLink, bool) {
	if p == nil {
		return ProfileLink{}, false
	}
	for _, l := range p.Links {
		switch {
		case l.From == a && l.To == b:
			return l, true
		case l.From == b && l.To == a:
			return ProfileLink{From: a, To: b, Bandwidth: l.ReverseBandwidth, ReverseBandwidth: l.Bandwidth,
				Latency: l.ReverseLatency, ReverseLatency: l.Latency}, true
		}
	}
	return ProfileLink{}, false
}

// applyDefault puts the profile's figures into a default link.
func (p *Profile) applyDefault(l *Link, tiers []Tier) {
	if pl, ok := p.lookup(tiers[l.From].Kind, tiers[l.To].Kind); ok {
		l.Bandwidth, l.ReverseBandwidth = pl.Bandwidth, pl.ReverseBandwidth
		l.Latency, l.ReverseLatency = pl.Latency, pl.ReverseLatency
	}
}

// ApplyProfile replaces the figures of every link whose tier kinds the
// profile measured, explicit ones included: what `kvsim replay --profile`
// does to predict this machine.
func (s *Scenario) ApplyProfile(p *Profile) {
	for i := range s.Links {
		p.applyDefault(&s.Links[i], s.Tiers)
	}
}

// filePath anchors a relative path read from key of table: one written in
// the file is relative to the file's folder (a scenario moves with its
// trace), one given by --set relative to the working directory (as the
// shell completed it).
func (p *parser) filePath(table, key, v string) string {
	if filepath.IsAbs(v) || p.file == "" || p.lines[keyPos{table, 0, key}] == setLine {
		return v
	}
	return filepath.Join(filepath.Dir(p.file), v)
}

// CheckTrace reports a trace file that is not there, naming the scenario
// file, the key's line (or --set) and the absolute path looked at, with
// the rule that anchored it.
func (s *Scenario) CheckTrace() error {
	w := &s.Workload
	if w.Gen != nil {
		return nil
	}
	_, err := os.Stat(w.Trace)
	if err == nil {
		return nil
	}
	abs, aerr := filepath.Abs(w.Trace)
	if aerr != nil {
		abs = w.Trace
	}
	rule := "a trace path written in the scenario is relative to its folder"
	if w.TraceLine == setLine {
		rule = "a trace path given by --set is relative to the working directory"
	}
	return &Error{Path: s.Path, Line: w.TraceLine, Msg: fmt.Sprintf("workload: trace: %s: %s (%s)", abs, errText(err), rule), Err: err}
}
