//go:build linux

package bucket

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkBucketPutGet measures the bucket store on the test disk with
// O_DIRECT: put (including the final seal), single gets and batches of 32
// gets of random keys, for both engines and two block sizes. MB/s is of
// block payload.
//
//	go test ./hw -run '^$' -bench BucketPutGet -benchtime 2s
func BenchmarkBucketPutGet(b *testing.B) {
	for _, mode := range []string{"pread", "io_uring"} {
		for _, size := range []int{64 << 10, 1 << 20} {
			name := fmt.Sprintf("%s/%dKiB", mode, size>>10)
			data := bucketPayload(1, size)
			opts := func(dir string) StoreOptions {
				o := DefaultStoreOptions(dir)
				o.EngineMode = mode
				o.Capacity = 2 << 30
				return o
			}
			open := func(b *testing.B, o StoreOptions) *Store {
				s, rep, err := Open(o)
				if err != nil {
					b.Skipf("%s: %v", mode, err)
				}
				if rep.Engine != mode && !(mode == "pread" && rep.Engine == "pread/pwrite") {
					s.Close()
					b.Skipf("%s fell back to %s: %s", mode, rep.Engine, rep.EngineNote)
				}
				return s
			}

			b.Run(name+"/put", func(b *testing.B) {
				s := open(b, opts(bucketTestDir(b)))
				defer s.Close()
				b.SetBytes(int64(size))
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					if err := s.Put(uint64(i), data); err != nil {
						b.Fatal(err)
					}
				}
				if err := s.Flush(); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				s.Evicted()
			})

			// Reads share one store of 512 MiB of blocks.
			var s *Store
			nkeys := (512 << 20) / size
			outer := b
			setup := func(b *testing.B) *Store {
				if s == nil {
					// The directory belongs to the outer benchmark: the
					// store outlives each run of the sub-benchmarks.
					s = open(b, opts(bucketTestDir(outer)))
					for k := range nkeys {
						if err := s.Put(uint64(k), data); err != nil {
							b.Fatal(err)
						}
					}
					if err := s.Flush(); err != nil {
						b.Fatal(err)
					}
				}
				return s
			}
			b.Run(name+"/get", func(b *testing.B) {
				s := setup(b)
				dst := make([]byte, size)
				r := rand.New(rand.NewPCG(1, 2))
				b.SetBytes(int64(size))
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					if _, err := s.Get(uint64(r.IntN(nkeys)), dst); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(name+"/getbatch32", func(b *testing.B) {
				s := setup(b)
				const batch = 32
				keys := make([]uint64, batch)
				dst := make([][]byte, batch)
				for i := range dst {
					dst[i] = make([]byte, size)
				}
				ns, errs := make([]int, batch), make([]error, batch)
				r := rand.New(rand.NewPCG(1, 2))
				b.SetBytes(int64(size) * batch)
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					for i := range keys {
						keys[i] = uint64(r.IntN(nkeys))
					}
					if err := s.GetBatch(keys, dst, ns, errs); err != nil {
						b.Fatal(err)
					}
				}
			})
			if s != nil {
				s.Close()
			}
		}
	}
}
