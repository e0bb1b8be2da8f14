// CuratorWorker is Apache Curator's InterProcessMutex as a zkchaos worker:
// the worker protocol of docs/worker-protocol.md (requests on stdin,
// responses and events on stdout, one JSON object per line, logs on
// stderr), with Curator used as its documentation says: one mutex per lock
// path, acquire with a timeout, a ConnectionStateListener that treats
// SUSPENDED as "stop protected work" and LOST as "the lock is gone".
//
// It needs nothing but Curator 5, ZooKeeper and the JDK (java.net.http for
// the register); the protocol is flat, so the JSON code here is small.
//
// Credentials come from the environment (docs/worker-protocol.md,
// "Credentials"): ZKCHAOS_ZK_AUTH (digest:USER:PASSWORD) is presented to
// ZooKeeper and every node this worker creates gets CREATOR_ALL plus world
// read; ZKCHAOS_REGISTER_SECRET goes with every register call.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.api.ACLProvider;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Stat;

public final class CuratorWorker {
    // The mutex's own node is only reachable from a subclass.
    static final class Mutex extends InterProcessMutex {
        Mutex(CuratorFramework c, String path) { super(c, path); }
        String lockPath() { return getLockPath(); }
    }

    static final class Grant {
        final String node; final long token; final long session;
        boolean lost;
        Grant(String node, long token, long session) { this.node = node; this.token = token; this.session = session; }
    }

    static final PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, StandardCharsets.UTF_8);
    static final Object outLock = new Object();

    final String register;
    final int process;
    final String root;
    final String tokenKind;
    final CuratorFramework client;
    final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    final Map<String, Mutex> mutexes = new HashMap<>();
    // grants are guarded by this; the listener thread marks them lost.
    final Map<String, Grant> grants = new HashMap<>();
    volatile boolean usable; // connected and not suspended/lost
    volatile long session;
    final long pid = ProcessHandle.current().pid();

    // The environment variables of docs/worker-protocol.md, "Credentials".
    static final String ZK_AUTH_ENV = "ZKCHAOS_ZK_AUTH";
    static final String REGISTER_SECRET_ENV = "ZKCHAOS_REGISTER_SECRET";

    // registerAuth is the Authorization header of register calls, null
    // without a secret.
    final String registerAuth;

    CuratorWorker(String zk, String register, int process, long sessionMs, String tokenKind, String root) {
        this.register = register.replaceAll("/+$", "");
        this.process = process;
        this.root = root;
        this.tokenKind = tokenKind;
        String secret = System.getenv(REGISTER_SECRET_ENV);
        this.registerAuth = secret == null || secret.isEmpty() ? null : "Bearer " + secret;
        CuratorFrameworkFactory.Builder b = CuratorFrameworkFactory.builder().connectString(zk)
            .sessionTimeoutMs((int) sessionMs).connectionTimeoutMs((int) Math.max(sessionMs, 1000))
            .retryPolicy(new ExponentialBackoffRetry(100, 3));
        String auth = System.getenv(ZK_AUTH_ENV);
        if (auth != null && !auth.isEmpty()) {
            String[] parts = auth.split(":", 3);
            if (parts.length != 3 || !parts[0].equals("digest") || parts[1].isEmpty() || parts[2].isEmpty()) {
                log(ZK_AUTH_ENV + ": want digest:USER:PASSWORD");
                System.exit(255);
            }
            // Curator hands the credential to every ZooKeeper handle it
            // makes, before any request, and re-adds it after an expiry.
            b = b.authorization("digest", (parts[1] + ":" + parts[2]).getBytes(StandardCharsets.UTF_8))
                .aclProvider(new ProtectedAcl());
            log("authenticating to ZooKeeper as digest:" + parts[1]);
        }
        this.client = b.build();
    }

    // ProtectedAcl gives every node this worker creates (lock nodes, and a
    // key node should it be missing) all rights for the authenticated
    // creator and read for everyone: the ACL the controller gives the lock
    // root, so no anonymous client can delete or forge a lock node.
    static final class ProtectedAcl implements ACLProvider {
        static final List<ACL> ACLS = new ArrayList<>();
        static {
            ACLS.addAll(ZooDefs.Ids.CREATOR_ALL_ACL);
            ACLS.addAll(ZooDefs.Ids.READ_ACL_UNSAFE);
        }
        @Override public List<ACL> getDefaultAcl() { return ACLS; }
        @Override public List<ACL> getAclForPath(String path) { return ACLS; }
    }

    // helloSent holds session events back until hello is out: the protocol
    // promises hello as the first line.
    static volatile boolean helloSent;

    static void event(Map<String, Object> m) { if (helloSent) emit(m); }

    static void log(String msg) { System.err.println("curator-worker: " + msg); }

    static void emit(Map<String, Object> m) {
        String line = Json.encode(m);
        synchronized (outLock) { out.println(line); out.flush(); }
    }

    static Map<String, Object> obj(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i + 1 < kv.length; i += 2) if (kv[i + 1] != null) m.put((String) kv[i], kv[i + 1]);
        return m;
    }

    static String hex(long id) { return "0x" + Long.toHexString(id); }

    String password() {
        try {
            byte[] pw = client.getZookeeperClient().getZooKeeper().getSessionPasswd();
            return pw == null ? null : Base64.getEncoder().encodeToString(pw);
        } catch (Exception e) { return null; }
    }

    long currentSession() {
        try { return client.getZookeeperClient().getZooKeeper().getSessionId(); } catch (Exception e) { return 0; }
    }

    void onState(ConnectionState st) {
        switch (st) {
            case CONNECTED:
            case RECONNECTED: {
                long id = currentSession();
                List<Map<String, Object>> lostNow = new ArrayList<>();
                synchronized (this) {
                    for (Map.Entry<String, Grant> e : grants.entrySet()) {
                        Grant g = e.getValue();
                        if (!g.lost && g.session != id) { g.lost = true; lostNow.add(lostEvent(e.getKey(), g, "session-changed")); }
                    }
                    session = id;
                    usable = true;
                }
                event(obj("event", "session", "state", "connected", "session", hex(id), "password", password()));
                for (Map<String, Object> m : lostNow) event(m);
                break;
            }
            case SUSPENDED:
                usable = false;
                event(obj("event", "session", "state", "disconnected", "session", hex(session)));
                break;
            case LOST: {
                usable = false;
                List<Map<String, Object>> lostNow = new ArrayList<>();
                synchronized (this) {
                    for (Map.Entry<String, Grant> e : grants.entrySet()) {
                        Grant g = e.getValue();
                        if (!g.lost) { g.lost = true; lostNow.add(lostEvent(e.getKey(), g, "expired")); }
                    }
                }
                event(obj("event", "session", "state", "expired", "session", hex(session)));
                for (Map<String, Object> m : lostNow) event(m);
                break;
            }
            default:
                break;
        }
    }

    static Map<String, Object> lostEvent(String key, Grant g, String why) {
        return obj("event", "lost", "key", key, "token", g.token, "node", g.node, "state", why, "session", hex(g.session));
    }

    void run() throws Exception {
        client.getConnectionStateListenable().addListener((c, st) -> onState(st));
        client.start();
        if (!client.blockUntilConnected(20, TimeUnit.SECONDS)) {
            log("no ZooKeeper session within 20s");
            System.exit(1);
        }
        // The listener's CONNECTED may come before or after this point;
        // hello carries the session either way.
        session = currentSession();
        usable = true;
        emit(obj("event", "hello", "pid", pid, "session", hex(session), "password", password()));
        helloSent = true;
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            Map<String, Object> resp;
            long id = 0;
            try {
                Object parsed = Json.parse(line);
                if (!(parsed instanceof Map)) throw new IllegalArgumentException("not an object");
                @SuppressWarnings("unchecked") Map<String, Object> req = (Map<String, Object>) parsed;
                id = num(req.get("id"));
                resp = handle(req);
            } catch (Exception e) {
                resp = obj("type", "fail", "error", "malformed request: " + e.getMessage());
            }
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("id", id);
            m.putAll(resp);
            emit(m);
        }
        shutdown();
    }

    static long num(Object o) {
        if (o instanceof Long) return (Long) o;
        if (o instanceof Double) return (long) (double) (Double) o;
        return 0;
    }

    Map<String, Object> handle(Map<String, Object> req) {
        Object f = req.get("f");
        Object key = req.get("key");
        if (!(f instanceof String)) return obj("type", "fail", "error", "missing f");
        if (!(key instanceof String) || ((String) key).isEmpty() || ((String) key).contains("/"))
            return obj("type", "fail", "error", f + ": missing or bad key");
        String k = (String) key;
        Map<String, Object> r;
        switch ((String) f) {
            case "acquire": r = acquire(k, num(req.get("timeout_ms"))); break;
            case "release": r = release(k); break;
            case "read": r = read(k); break;
            case "write":
                if (!(req.get("value") instanceof Long)) return obj("type", "fail", "key", k, "error", "write: missing value");
                r = write(k, (Long) req.get("value"), num(req.get("work_ms")));
                break;
            default: return obj("type", "fail", "error", "unknown f \"" + f + "\"");
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("key", k);
        m.putAll(r);
        return m;
    }

    Map<String, Object> acquire(String key, long timeoutMs) {
        if (timeoutMs <= 0) return obj("type", "fail", "error", "acquire: timeout_ms must be positive");
        Mutex mu = mutexes.computeIfAbsent(key, k -> new Mutex(client, root + "/" + k));
        synchronized (this) {
            if (grants.containsKey(key) || mu.isOwnedByCurrentThread()) return obj("type", "fail", "error", "already holding " + key);
        }
        boolean got;
        try {
            got = mu.acquire(timeoutMs, TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            // Curator deletes its node on the way out (a guaranteed delete
            // that retries in the background), but whether the lock was
            // taken before the failure is not known here.
            return obj("type", "info", "error", "acquire: " + e);
        }
        if (!got) return obj("type", "fail", "error", "timeout");
        String node = mu.lockPath();
        try {
            Stat st = client.checkExists().forPath(node);
            if (st == null) throw new IllegalStateException("lock node " + node + " is gone right after acquire");
            long tok = "seq".equals(tokenKind) ? Long.parseLong(node.substring(node.length() - 10)) : st.getCzxid();
            Grant g = new Grant(node, tok, st.getEphemeralOwner());
            synchronized (this) { grants.put(key, g); }
            log("acquired " + key + " node " + node + " token " + tok);
            return obj("type", "ok", "token", tok, "node", node);
        } catch (Exception e) {
            try { mu.release(); } catch (Exception re) { log("release after failed stat: " + re); }
            return obj("type", "info", "error", "acquire: token of " + node + ": " + e);
        }
    }

    // held is the check right before protected work: Curator says we own
    // it, no LOST since, and the connection is not SUSPENDED.
    synchronized Grant held(String key) {
        Grant g = grants.get(key);
        Mutex mu = mutexes.get(key);
        if (g == null || g.lost || mu == null || !mu.isOwnedByCurrentThread()) return null;
        if (!usable || !client.getZookeeperClient().isConnected()) return null;
        return g;
    }

    Map<String, Object> read(String key) {
        Grant g = held(key);
        if (g == null) return obj("type", "fail", "error", "not holding " + key);
        return registerCall("/read", obj("key", key, "token", g.token, "process", (long) process, "pid", pid), g.token, null);
    }

    Map<String, Object> write(String key, long value, long workMs) {
        Grant g = held(key);
        if (g == null) return obj("type", "fail", "error", "not holding " + key);
        if (workMs > 0) {
            try { Thread.sleep(workMs); } catch (InterruptedException e) { return obj("type", "fail", "token", g.token, "error", "interrupted during work"); }
        }
        // No second check: what a real holder does after its work.
        return registerCall("/write", obj("key", key, "value", value, "token", g.token, "process", (long) process, "pid", pid), g.token, value);
    }

    Map<String, Object> registerCall(String path, Map<String, Object> body, long token, Long written) {
        HttpResponse<String> resp;
        try {
            HttpRequest.Builder rb = HttpRequest.newBuilder(URI.create(register + path)).timeout(Duration.ofSeconds(5))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(Json.encode(body)));
            if (registerAuth != null) rb.header("Authorization", registerAuth);
            resp = http.send(rb.build(), HttpResponse.BodyHandlers.ofString());
        } catch (Exception e) {
            return obj("type", "info", "token", token, "value", written, "error", "register " + path + ": " + e);
        }
        if (resp.statusCode() >= 400 && resp.statusCode() < 500)
            return obj("type", "fail", "token", token, "value", written, "error", "register " + path + ": HTTP " + resp.statusCode() + ": " + resp.body().trim());
        if (resp.statusCode() != 200)
            return obj("type", "info", "token", token, "value", written, "error", "register " + path + ": HTTP " + resp.statusCode());
        Map<String, Object> rep;
        try {
            @SuppressWarnings("unchecked") Map<String, Object> r = (Map<String, Object>) Json.parse(resp.body());
            rep = r;
        } catch (Exception e) {
            return obj("type", "info", "token", token, "value", written, "error", "register " + path + ": bad reply: " + e);
        }
        if (Boolean.TRUE.equals(rep.get("accepted"))) {
            return obj("type", "ok", "token", token, "accepted", true, "value", written != null ? written : (Object) num(rep.get("value")));
        }
        String reason = rep.get("reason") instanceof String ? (String) rep.get("reason") : "";
        return obj("type", "fail", "token", token, "value", written, "accepted", false, "current_token", num(rep.get("fence")),
            "error", reason.isEmpty() ? "rejected" : "rejected: " + reason);
    }

    Map<String, Object> release(String key) {
        Grant g;
        synchronized (this) { g = grants.remove(key); }
        Mutex mu = mutexes.get(key);
        if (g == null || mu == null || !mu.isOwnedByCurrentThread()) return obj("type", "fail", "error", "not held");
        // Curator's release ignores a node that is already gone, so ask
        // first: a release of a revoked lock must not be reported as done.
        boolean revoked = g.lost;
        if (!revoked) {
            try {
                Stat st = client.checkExists().forPath(g.node);
                revoked = st == null || st.getEphemeralOwner() != g.session;
            } catch (Exception e) {
                try { mu.release(); } catch (Exception re) { /* the session's end removes it */ }
                return obj("type", "info", "node", g.node, "token", g.token, "error", "release: " + e);
            }
        }
        try {
            mu.release();
        } catch (Exception e) {
            return obj("type", "info", "node", g.node, "token", g.token, "error", "release: " + e);
        }
        if (revoked) return obj("type", "fail", "node", g.node, "token", g.token, "error", "revoked");
        log("released " + key + " node " + g.node);
        return obj("type", "ok", "node", g.node, "token", g.token);
    }

    void shutdown() {
        List<String> keys;
        synchronized (this) { keys = new ArrayList<>(grants.keySet()); }
        for (String k : keys) {
            Mutex mu = mutexes.get(k);
            try { if (mu != null && mu.isOwnedByCurrentThread()) mu.release(); } catch (Exception e) { log("release at exit " + k + ": " + e); }
        }
        client.close();
    }

    // parseDuration reads a Go duration such as 3s, 1.5s, 500ms, 1m0s.
    static long parseDuration(String s) {
        Matcher m = Pattern.compile("(\\d+(?:\\.\\d+)?)(ns|us|µs|ms|s|m|h)").matcher(s);
        double ms = 0;
        int end = 0;
        while (m.find()) {
            if (m.start() != end) throw new IllegalArgumentException("bad duration " + s);
            end = m.end();
            double v = Double.parseDouble(m.group(1));
            switch (m.group(2)) {
                case "ns": ms += v / 1e6; break;
                case "us": case "µs": ms += v / 1e3; break;
                case "ms": ms += v; break;
                case "s": ms += v * 1e3; break;
                case "m": ms += v * 60e3; break;
                default: ms += v * 3600e3;
            }
        }
        if (end != s.length() || end == 0) throw new IllegalArgumentException("bad duration " + s);
        return (long) ms;
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> fl = new HashMap<>();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (!a.startsWith("--")) { log("unexpected argument " + a); System.exit(255); }
            a = a.replaceFirst("^--?", "");
            int eq = a.indexOf('=');
            if (eq >= 0) fl.put(a.substring(0, eq), a.substring(eq + 1));
            else if (i + 1 < args.length) fl.put(a, args[++i]);
            else { log("flag --" + a + " needs a value"); System.exit(255); }
        }
        if (!fl.containsKey("zk") || !fl.containsKey("register")) {
            log("usage: CuratorWorker --zk HOST:PORT,... --register URL [--process N] [--session-timeout D] [--token czxid|seq] [--root PATH]");
            System.exit(255);
        }
        long st = parseDuration(fl.getOrDefault("session-timeout", "3s"));
        new CuratorWorker(fl.get("zk"), fl.get("register"), Integer.parseInt(fl.getOrDefault("process", "0")), st,
            fl.getOrDefault("token", "czxid"), fl.getOrDefault("root", "/locks/inventory")).run();
        System.exit(0);
    }

    // Json is just enough JSON for the protocol: objects, arrays, strings,
    // integers (as Long), other numbers (as Double), booleans and null.
    static final class Json {
        private final String s;
        private int i;
        private Json(String s) { this.s = s; }

        static Object parse(String s) {
            Json j = new Json(s);
            Object v = j.value();
            j.ws();
            if (j.i != s.length()) throw new IllegalArgumentException("trailing data at " + j.i);
            return v;
        }

        private void ws() { while (i < s.length() && Character.isWhitespace(s.charAt(i))) i++; }

        private Object value() {
            ws();
            if (i >= s.length()) throw new IllegalArgumentException("unexpected end");
            char c = s.charAt(i);
            if (c == '{') {
                i++;
                Map<String, Object> m = new LinkedHashMap<>();
                ws();
                if (peek('}')) { i++; return m; }
                while (true) {
                    ws();
                    Object k = value();
                    if (!(k instanceof String)) throw new IllegalArgumentException("object key must be a string");
                    ws();
                    expect(':');
                    m.put((String) k, value());
                    ws();
                    if (peek(',')) { i++; continue; }
                    expect('}');
                    return m;
                }
            }
            if (c == '[') {
                i++;
                List<Object> l = new ArrayList<>();
                ws();
                if (peek(']')) { i++; return l; }
                while (true) {
                    l.add(value());
                    ws();
                    if (peek(',')) { i++; continue; }
                    expect(']');
                    return l;
                }
            }
            if (c == '"') return string();
            if (s.startsWith("true", i)) { i += 4; return Boolean.TRUE; }
            if (s.startsWith("false", i)) { i += 5; return Boolean.FALSE; }
            if (s.startsWith("null", i)) { i += 4; return null; }
            int st = i;
            while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) i++;
            String n = s.substring(st, i);
            if (n.isEmpty()) throw new IllegalArgumentException("unexpected '" + c + "' at " + st);
            if (n.matches("-?\\d+")) return Long.parseLong(n);
            return Double.parseDouble(n);
        }

        private boolean peek(char c) { return i < s.length() && s.charAt(i) == c; }

        private void expect(char c) {
            if (!peek(c)) throw new IllegalArgumentException("expected '" + c + "' at " + i);
            i++;
        }

        private String string() {
            expect('"');
            StringBuilder b = new StringBuilder();
            while (true) {
                if (i >= s.length()) throw new IllegalArgumentException("unterminated string");
                char c = s.charAt(i++);
                if (c == '"') return b.toString();
                if (c != '\\') { b.append(c); continue; }
                char e = s.charAt(i++);
                switch (e) {
                    case 'n': b.append('\n'); break;
                    case 't': b.append('\t'); break;
                    case 'r': b.append('\r'); break;
                    case 'b': b.append('\b'); break;
                    case 'f': b.append('\f'); break;
                    case 'u': b.append((char) Integer.parseInt(s.substring(i, i + 4), 16)); i += 4; break;
                    default: b.append(e);
                }
            }
        }

        static String encode(Object v) {
            StringBuilder b = new StringBuilder();
            enc(b, v);
            return b.toString();
        }

        private static void enc(StringBuilder b, Object v) {
            if (v == null) { b.append("null"); return; }
            if (v instanceof String) { str(b, (String) v); return; }
            if (v instanceof Number || v instanceof Boolean) { b.append(v); return; }
            if (v instanceof Map) {
                b.append('{');
                boolean first = true;
                for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                    if (!first) b.append(',');
                    first = false;
                    str(b, String.valueOf(e.getKey()));
                    b.append(':');
                    enc(b, e.getValue());
                }
                b.append('}');
                return;
            }
            if (v instanceof List) {
                b.append('[');
                boolean first = true;
                for (Object o : (List<?>) v) { if (!first) b.append(','); first = false; enc(b, o); }
                b.append(']');
                return;
            }
            str(b, v.toString());
        }

        private static void str(StringBuilder b, String s) {
            b.append('"');
            for (int k = 0; k < s.length(); k++) {
                char c = s.charAt(k);
                switch (c) {
                    case '"': b.append("\\\""); break;
                    case '\\': b.append("\\\\"); break;
                    case '\n': b.append("\\n"); break;
                    case '\r': b.append("\\r"); break;
                    case '\t': b.append("\\t"); break;
                    default:
                        if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
                        else b.append(c);
                }
            }
            b.append('"');
        }
    }
}
