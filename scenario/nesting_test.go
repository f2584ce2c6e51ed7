package scenario

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"kvsim/internal/tomlguard"
)

// allocBudget is what loading a scenario may allocate in all (garbage
// included): a fixed part plus a part per input byte. Wide files at the
// nesting limit take 50 to 300 bytes per byte; the TOML library's cost
// quadratic in nesting took 17,000 per byte at 2,000 nested inline tables,
// and grows with depth.
func allocBudget(n int) uint64 { return 4<<20 + 1000*uint64(n) }

// nested is head, open n times, mid, close n times.
func nested(head, open string, n int, mid, close string) string {
	return head + strings.Repeat(open, n) + mid + strings.Repeat(close, n)
}

// loadAlloc parses src (or, asSet, a scenario with src as a --set value)
// and returns what that allocated.
func loadAlloc(src string, asSet bool) (uint64, []byte, []string, error) {
	data, sets := []byte(src), []string(nil)
	if asSet {
		data, sets = []byte(doc("")), []string{"seed=" + src}
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := ParseWith(data, "f.toml", sets)
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc, data, sets, err
}

// FuzzNesting: loading a scenario allocates memory linear in its size
// whatever its nesting (tables, dotted keys, inline tables, arrays; in the
// file or in a --set value), and a file over the limits is refused in one
// line naming it. An allocation budget per input byte stands for time,
// too: the decoder's time grows with what it allocates.
func FuzzNesting(f *testing.F) {
	const deep = 2000 // 1 GB and seconds before the limit; a little alloc after
	f.Add("x = ", "{a = ", deep, "1", "}", false)
	f.Add("x = ", "[", deep, "1", "]", false)
	f.Add("x = ", "{a.b = ", deep, "1", "}", false)
	f.Add("x = ", "[{a = ", deep, "1", "}]", false)
	f.Add("[", "a.", deep, "b]\nx = 1", "", false)
	f.Add("[[", "a.", deep, "b]]\nx = 1", "", false)
	f.Add("", "a.", deep, "b = 1", "", false)
	f.Add("x = ", "{a = ", 15, "1", "}", false)
	f.Add("", "{a = ", deep, "1", "}", true)
	f.Add("", "a.", deep, "b", "", true)
	f.Add("x = '''", "{a = ", deep, "1", "}", false) // in a string: no nesting
	f.Add("x = \"", "[", 1_200_000, "", "]", false)  // longer than the size limit
	f.Fuzz(func(t *testing.T, head, open string, n int, mid, close string, asSet bool) {
		// Up to twice the size limit: past it, the refusal's cost is checked.
		if n < 0 || n > 1<<21 || len(head)+len(mid) > 1<<10 || (len(open)+len(close))*n > 2*tomlguard.MaxBytes {
			t.Skip()
		}
		src := nested(head, open, n, mid, close)
		if !asSet {
			src = doc(src + "\n")
		}
		alloc, data, sets, err := loadAlloc(src, asSet)
		in := len(data)
		for _, s := range sets {
			in += len(s)
		}
		if budget := allocBudget(in); alloc > budget {
			t.Fatalf("loading %d bytes (%q... nested %d times) allocated %d bytes, over the budget of %d", in, open, n, alloc, budget)
		}
		if err != nil {
			checkErr(t, err, "f.toml")
		}
	})
}

// A scenario nested past tomlguard.MaxDepth or longer than MaxBytes is
// refused before the TOML library reads it, in one line that names the
// file, the line and the limit; one at the limit loads.
func TestNestingRefused(t *testing.T) {
	deep := tomlguard.MaxDepth + 1
	refused := fmt.Sprintf("nested %d levels deep (table headers, dotted keys, inline tables and arrays); kvsim reads at most %d", deep, tomlguard.MaxDepth)
	for _, tc := range []struct {
		name, src string
		set       bool
		want      string
	}{
		{"inline tables", "seed = 1\n" + nested("x = ", "{a = ", 5000, "1", "}"), false, "f.toml:2: " + refused},
		{"arrays", nested("x = ", "[", deep, "1", "]"), false, "f.toml:1: " + refused},
		{"dotted key", nested("", "a.", deep-1, "b = 1", ""), false, "f.toml:1: " + refused},
		{"dotted key, long", nested("", "a.", 5000, "b = 1", ""), false, "f.toml:1: " + refused},
		{"table header", "\n\n" + nested("[", "a.", deep-1, "b]", ""), false, "f.toml:3: " + refused},
		{"header and key", nested("[", "a.", 3, "b]\n", "") + nested("", "c.", 4, "d = 1", ""), false, "f.toml:2: " + refused},
		{"--set", nested("", "{a = ", 5000, "1", "}"), true, "f.toml: --set seed: " + refused},
		{"size", "x = \"" + strings.Repeat("a", tomlguard.MaxBytes) + "\"\n", false, "f.toml: longer than 1048576 bytes (1 MiB)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := tc.src
			if !tc.set {
				src = doc(src + "\n")
			}
			alloc, _, _, err := loadAlloc(src, tc.set)
			if err == nil {
				t.Fatal("accepted")
			}
			checkErr(t, err, "f.toml")
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error %q, want it to start %q", err, tc.want)
			}
			if tc.name != "size" && alloc > allocBudget(len(src)) {
				t.Errorf("refusing it allocated %d bytes", alloc)
			}
		})
	}
	// At the limit: an eviction table MaxDepth levels down is read.
	ok := "[[tier]]\nkind = \"hbm\"\n[[policy]]\neviction = " + nested("", "{x = ", tomlguard.MaxDepth-2, "1", "}") + "\n"
	if _, err := Parse([]byte(doc(ok)), "f.toml"); err == nil || strings.Contains(err.Error(), "nesting") {
		t.Errorf("depth %d: %v (want the eviction's type error, not the nesting limit)", tomlguard.MaxDepth, err)
	}
}

// Every reader of a TOML file refuses one nested too deep, naming the file
// and line: the scenario, a hardware profile, an --inject table; and a
// scenario that never ends (a device) is refused at the size limit, not
// read whole.
func TestNestingRefusedEveryReader(t *testing.T) {
	dir := t.TempDir()
	deep := nested("x = ", "{a = ", 5000, "1", "}") + "\n"
	write := func(name, text string) string {
		p := dir + "/" + name
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	refused := fmt.Sprintf("nested %d levels deep", tomlguard.MaxDepth+1)
	for name, load := range map[string]func(string) error{
		"scenario": func(p string) error { _, err := Load(p); return err },
		"profile":  func(p string) error { _, err := LoadProfile(p); return err },
		"inject":   func(p string) error { _, err := LoadInject(p); return err },
	} {
		p := write(name+".toml", "# a hardware profile, say\n"+deep)
		err := load(p)
		if err == nil || !strings.HasPrefix(err.Error(), p+":2: ") || !strings.Contains(err.Error(), refused) {
			t.Errorf("%s: %v, want %s:2: ... %s", name, err, p, refused)
		}
	}
	if _, err := Load("/dev/zero"); err == nil || err.Error() != "/dev/zero: longer than 1048576 bytes (1 MiB), the most kvsim reads of a TOML file" {
		t.Errorf("/dev/zero: %v", err)
	}
}
