import json,glob,statistics,sys
def find(o,key):
    if isinstance(o,dict):
        if key in o: return o
        for v in o.values():
            x=find(v,key)
            if x: return x
    if isinstance(o,list):
        for v in o:
            x=find(v,key)
            if x: return x
FL="floor (issue: delivery + submit + status write)"
def summ(pat):
    rows=[]
    for f in sorted(glob.glob(pat)):
        r=find(json.load(open(f)),'isolated_to_jobid')
        fl=r['floor'][FL]*1000; p50=r['isolated_to_jobid']['p50']*1000; p99=r['isolated_to_jobid']['p99']*1000
        rows.append((fl,p50,p99,p50/fl,p99/fl))
    def rng(i,fmt="%.1f"):
        v=[x[i] for x in rows]
        return ("%s-%s (median %s)"%(fmt,fmt,fmt))%(min(v),max(v),statistics.median(v))
    n=len(rows)
    le3=sum(1 for x in rows if x[3]<=3); le10=sum(1 for x in rows if x[4]<=10)
    print("%-22s n=%d floor %s | p50 %s | %s (<=3x: %d) | p99 %s | %s (<=10x: %d)"%(pat,n,rng(0,"%.2f"),rng(1),rng(3,"%.2fx"),le3,rng(2),rng(4,"%.1fx"),le10))
for p in sys.argv[1:]: summ(p)
