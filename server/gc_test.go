package server

import (
	"errors"
	"io/fs"
	"testing"
)

func TestGCDefaults(t *testing.T) {
	const v2, v1 = "/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"
	for _, c := range []struct {
		name  string
		env   map[string]string
		files map[string]string
		want  GCSettings
	}{
		{"nothing set, no cgroup", nil, nil, GCSettings{Percent: 200}},
		{"GOGC set", map[string]string{"GOGC": "100"}, nil, GCSettings{}},
		{"GOGC off", map[string]string{"GOGC": "off"}, nil, GCSettings{}},
		{"cgroup v2 limit", nil, map[string]string{v2: "536870912\n"}, GCSettings{Percent: 200, MemoryLimit: 483183820}},
		{"cgroup v2 without a limit", nil, map[string]string{v2: "max\n"}, GCSettings{Percent: 200}},
		{"cgroup v1 limit", nil, map[string]string{v1: "1073741824\n"}, GCSettings{Percent: 200, MemoryLimit: 966367641}},
		{"cgroup v1 without a limit", nil, map[string]string{v1: "9223372036854771712\n"}, GCSettings{Percent: 200}},
		{"GOMEMLIMIT set", map[string]string{"GOMEMLIMIT": "1GiB"}, map[string]string{v2: "536870912"}, GCSettings{Percent: 200}},
		{"both set", map[string]string{"GOGC": "50", "GOMEMLIMIT": "1GiB"}, map[string]string{v2: "536870912"}, GCSettings{}},
		{"garbage in the file", nil, map[string]string{v2: "lots"}, GCSettings{Percent: 200}},
		{"a zero limit", nil, map[string]string{v2: "0"}, GCSettings{Percent: 200}},
		// The host's cgroup namespace: the process's own cgroup, found
		// through /proc/self/cgroup, and its ancestors; the lowest wins.
		{"cgroup v2 by path", nil, map[string]string{
			"/proc/self/cgroup": "0::/machine.slice/libpod-1.scope\n",
			"/sys/fs/cgroup/machine.slice/libpod-1.scope/memory.max": "1073741824\n",
			"/sys/fs/cgroup/machine.slice/memory.max":                "max\n",
		}, GCSettings{Percent: 200, MemoryLimit: 966367641}},
		{"cgroup v2, the limit on the parent", nil, map[string]string{
			"/proc/self/cgroup":                          "0::/kubepods/pod1/c1\n",
			"/sys/fs/cgroup/kubepods/pod1/c1/memory.max": "max\n",
			"/sys/fs/cgroup/kubepods/pod1/memory.max":    "536870912\n",
			"/sys/fs/cgroup/kubepods/memory.max":         "1073741824\n",
		}, GCSettings{Percent: 200, MemoryLimit: 483183820}},
		{"cgroup v1 by path, among other controllers", nil, map[string]string{
			"/proc/self/cgroup": "12:cpu,cpuacct:/docker/c1\n4:memory:/docker/c1\n1:name=systemd:/docker/c1\n",
			"/sys/fs/cgroup/memory/docker/c1/memory.limit_in_bytes": "536870912\n",
			v1: "9223372036854771712\n",
		}, GCSettings{Percent: 200, MemoryLimit: 483183820}},
		{"a namespace of its own: the root's", nil, map[string]string{
			"/proc/self/cgroup": "0::/\n",
			v2:                  "536870912\n",
		}, GCSettings{Percent: 200, MemoryLimit: 483183820}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := GCDefaults(func(k string) string { return c.env[k] }, func(name string) ([]byte, error) {
				if s, ok := c.files[name]; ok {
					return []byte(s), nil
				}
				return nil, &fs.PathError{Op: "open", Path: name, Err: errors.New("no such file or directory")}
			})
			if got != c.want {
				t.Errorf("GCDefaults = %+v, want %+v", got, c.want)
			}
		})
	}
}
