package storage

import "testing"

func TestLocateMapsEverySchemeOntoItsBucket(t *testing.T) {
	cases := []struct {
		loc  string
		want objectRef
	}{
		{"file:///tmp/wh/t/_delta_log/", objectRef{kind: "file", root: "file:///", key: "tmp/wh/t/_delta_log/"}},
		{"s3://lake/wh/t", objectRef{kind: "s3", bucket: "lake", root: "s3://lake/", key: "wh/t"}},
		{"s3a://lake/wh/t", objectRef{kind: "s3", bucket: "lake", root: "s3a://lake/", key: "wh/t"}},
		{"gs://lake/wh/t", objectRef{kind: "gs", bucket: "lake", root: "gs://lake/", key: "wh/t"}},
		{"abfss://cont@acct.dfs.core.windows.net/wh/t", objectRef{kind: "azblob", bucket: "cont", host: "acct",
			domain: "blob.core.windows.net", root: "abfss://cont@acct.dfs.core.windows.net/", key: "wh/t"}},
		{"abfs://cont@acct.dfs.core.chinacloudapi.cn/t", objectRef{kind: "azblob", bucket: "cont", host: "acct",
			domain: "blob.core.chinacloudapi.cn", root: "abfs://cont@acct.dfs.core.chinacloudapi.cn/", key: "t"}},
	}
	for _, c := range cases {
		got, err := locate(c.loc)
		if err != nil || got != c.want {
			t.Errorf("locate(%q) = %+v, %v; want %+v", c.loc, got, err, c.want)
		}
	}
	s3, _ := locate("s3://lake/a")
	s3a, _ := locate("s3a://lake/b")
	if s3.cacheKey() != s3a.cacheKey() {
		t.Errorf("s3 and s3a open different buckets: %q %q", s3.cacheKey(), s3a.cacheKey())
	}
}
