"""Usage: python3 graph/tools/module_layers.py [SRC_DIR] [-v]

Draws graph/src's module graph from `use crate::` paths (comments and test
modules skipped). A module is a top-level module, except the facade `looping`,
whose files count one by one (a name re-exported by looping/mod.rs resolves to the
file defining it). Prints cycles (strongly connected components) and a layering
(layer 0 imports nothing of the crate); exits 1 on a cycle. -v lists the edges."""
import os,re,sys,collections
root=sys.argv[1] if len(sys.argv)>1 and not sys.argv[1].startswith('-') else os.path.join(os.path.dirname(os.path.abspath(__file__)),'..','src')
reexp={}
lm=open(os.path.join(root,'looping/mod.rs')).read()
for m in re.finditer(r'pub use (\w+)::\{?([^;}]*)\}?;',lm):
    for n in re.findall(r'\w+',m.group(2)): reexp[n]='looping/'+m.group(1)
subs={f[:-3] for f in os.listdir(os.path.join(root,'looping')) if f.endswith('.rs') and f!='mod.rs'}
edges=collections.defaultdict(set)
libre={}
for m in re.finditer(r'pub use (\w+)::\{?([^;}]*)\}?;',open(os.path.join(root,'lib.rs')).read()):
    for n in re.findall(r'\w+',m.group(2)): libre[n]=m.group(1)
def resolve(path):
    parts=path.split('::')
    if parts[0]!='looping': return parts[0]
    if len(parts)>1 and parts[1] in subs: return 'looping/'+parts[1]
    return None
for dp,dn,fn in os.walk(root):
    for f in fn:
        if not f.endswith('.rs'): continue
        rel=os.path.relpath(os.path.join(dp,f),root)
        parts=rel[:-3].split('/')
        if parts[0] in ('lib',) : continue
        key=parts[0]
        if key=='interp_looped': key='interp'
        if key=='looping': 
            if parts[1]=='mod': continue
            key='looping/'+parts[1]
        src=open(os.path.join(dp,f)).read()
        src='\n'.join(l for l in src.split('\n') if not l.strip().startswith('//'))
        i=src.find('#[cfg(test)]'); src=src if i<0 else src[:i]
        if f=='tests.rs': continue
        if key.startswith('looping/'):
            for m in re.finditer(r'super::(\w+)',src):
                if m.group(1) in subs and 'looping/'+m.group(1)!=key: edges[key].add('looping/'+m.group(1))
        for m in re.finditer(r'crate::((?:\w+::)*)(\{[^;]*?\}|\w+)',src):
            pre=m.group(1).rstrip(':'); last=m.group(2)
            items=[]
            if last.startswith('{'):
                # crude: top-level names in braces
                inner=last[1:-1]
                for it in re.findall(r'(\w+(?:::\w+)*)',inner): items.append((pre+'::'+it) if pre else it)
            else: items.append((pre+'::'+last) if pre else last)
            for it in items:
                t=resolve(it)
                if t is None:
                    name=it.split('::')[1] if '::' in it else it
                    t=reexp.get(it.split('::')[-1] if it.count('::')>=1 else name,'looping')
                if t[:1].isupper(): t=libre.get(t,t)
                if t in ('default_registry','self'): continue
                if t!=key and not t.startswith(key+'/') : edges[key].add(t)
nodes=set(edges)|{t for s in edges for t in edges[s]}
idx={};low={};st=[];on=set();comps=[];c=[0]
sys.setrecursionlimit(10000)
def v(n):
    idx[n]=low[n]=c[0];c[0]+=1;st.append(n);on.add(n)
    for w in edges.get(n,()):
        if w not in idx: v(w);low[n]=min(low[n],low[w])
        elif w in on: low[n]=min(low[n],idx[w])
    if low[n]==idx[n]:
        comp=[]
        while True:
            w=st.pop();on.discard(w);comp.append(w)
            if w==n:break
        comps.append(comp)
for n in sorted(nodes):
    if n not in idx: v(n)
cyc=[c for c in comps if len(c)>1]
for c in cyc: print('CYCLE',sorted(c))
if cyc: sys.exit(1)
if '-v' in sys.argv:
    for s in sorted(edges): print(s,'->',sorted(edges[s]))
if not cyc:
    level={}
    def lv(n):
        if n not in level: level[n]=1+max((lv(t) for t in edges.get(n,())),default=-1)
        return level[n]
    for n in nodes: lv(n)
    for l in range(max(level.values())+1):
        print(l, ' '.join(sorted(n for n in nodes if level[n]==l)))
