module kvsim

go 1.26.0

require (
	github.com/BurntSushi/toml v1.6.0
	github.com/ebitengine/purego v0.11.3
	github.com/go-echarts/go-echarts/v2 v2.6.7
	github.com/go-zeromq/zmq4 v0.17.0
	github.com/vmihailenco/msgpack/v5 v5.4.1
	golang.org/x/sys v0.50.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/go-zeromq/goczmq/v4 v4.2.2 // indirect
	github.com/redis/go-redis/v9 v9.23.0 // indirect
	github.com/vmihailenco/tagparser/v2 v2.0.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sync v0.7.0 // indirect
	golang.org/x/text v0.15.0 // indirect
)
