// CuratorBase is what the Curator workers (CuratorWorker for the lock
// workload; CuratorElection and CuratorSelector, by way of
// CuratorCandidate, for the election workload) share: the worker
// protocol's line I/O (requests on stdin, responses and events on stdout,
// one JSON object per line, logs on stderr), the start-up flags, the
// Curator client with the credentials of docs/worker-protocol.md
// ("Credentials": ZKCHAOS_ZK_AUTH presented to ZooKeeper, every created
// node CREATOR_ALL plus world read; ZKCHAOS_REGISTER_SECRET with every
// register call), the register's HTTP calls, and the serving loop: hello
// first, one request at a time, and at the end of stdin the subclass's
// shutdown. Each subclass serves its workload's verbs (handle) and turns
// connection states into its events (onState).
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
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.utils.ZookeeperFactory;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.data.ACL;

abstract class CuratorBase {
    static final PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, StandardCharsets.UTF_8);
    static final Object outLock = new Object();

    // The environment variables of docs/worker-protocol.md, "Credentials".
    static final String ZK_AUTH_ENV = "ZKCHAOS_ZK_AUTH";
    static final String REGISTER_SECRET_ENV = "ZKCHAOS_REGISTER_SECRET";

    final String register;
    final int process;
    final long sessionMs;
    final CuratorFramework client;
    final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    final long pid = ProcessHandle.current().pid();
    // registerAuth is the Authorization header of register calls, null
    // without a secret.
    final String registerAuth;
    volatile boolean usable; // connected and not suspended/lost
    volatile long session;

    // factory may be null (Curator's own ZooKeeper handles).
    CuratorBase(Flags f, ZookeeperFactory factory) {
        this.register = f.register.replaceAll("/+$", "");
        this.process = f.process;
        this.sessionMs = f.sessionMs;
        String secret = System.getenv(REGISTER_SECRET_ENV);
        this.registerAuth = secret == null || secret.isEmpty() ? null : "Bearer " + secret;
        CuratorFrameworkFactory.Builder b = CuratorFrameworkFactory.builder().connectString(f.zk)
            .sessionTimeoutMs((int) sessionMs).connectionTimeoutMs((int) Math.max(sessionMs, 1000))
            .retryPolicy(new ExponentialBackoffRetry(100, 3));
        if (factory != null) b = b.zookeeperFactory(factory);
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

    // handle serves one request (its id is added by the loop).
    abstract Map<String, Object> handle(Map<String, Object> req);

    // onState turns a connection state change into events.
    abstract void onState(ConnectionState st);

    // shutdown closes the session at the end of stdin and reports it.
    abstract void shutdown();

    // PROTOCOL is the version of docs/worker-protocol.md this worker
    // speaks ("Versions"), sent in its hello.
    static final int PROTOCOL = 6;

    // helloWorkload is the hello's workload field, null for the lock.
    String helloWorkload() { return null; }

    // ProtectedAcl gives every node this worker creates all rights for the
    // authenticated creator and read for everyone: the ACL the controller
    // gives the roots, so no anonymous client can delete or forge a node.
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

    static long num(Object o) {
        if (o instanceof Long) return (Long) o;
        if (o instanceof Double) return (long) (double) (Double) o;
        return 0;
    }

    static void sleep(long ms) {
        try { Thread.sleep(ms); } catch (InterruptedException e) { Thread.currentThread().interrupt(); }
    }

    String password() {
        try {
            byte[] pw = client.getZookeeperClient().getZooKeeper().getSessionPasswd();
            return pw == null ? null : Base64.getEncoder().encodeToString(pw);
        } catch (Exception e) { return null; }
    }

    long currentSession() {
        try { return client.getZookeeperClient().getZooKeeper().getSessionId(); } catch (Exception e) { return 0; }
    }

    // Posted is a register call's outcome: status and body, or the
    // exception that left it unknown (no reply).
    static final class Posted {
        final int status; final String body; final Exception error;
        Posted(int status, String body, Exception error) { this.status = status; this.body = body; this.error = error; }
        // definite: the register refused the call before logging it (4xx).
        boolean definite() { return error == null && status >= 400 && status < 500; }
        String describe(String path) {
            if (error != null) return "register " + path + ": " + error;
            return "register " + path + ": HTTP " + status + (definite() ? ": " + body.trim() : "");
        }
        // reply parses a 200's body; null if it is not one.
        Map<String, Object> reply() {
            if (error != null || status != 200) return null;
            try {
                Object o = Json.parse(body);
                if (!(o instanceof Map)) return null;
                @SuppressWarnings("unchecked") Map<String, Object> m = (Map<String, Object>) o;
                return m;
            } catch (Exception e) { return null; }
        }
    }

    // post sends one register call with the run's secret.
    Posted post(String path, Map<String, Object> body) {
        try {
            HttpRequest.Builder rb = HttpRequest.newBuilder(URI.create(register + path)).timeout(Duration.ofSeconds(5))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(Json.encode(body)));
            if (registerAuth != null) rb.header("Authorization", registerAuth);
            HttpResponse<String> resp = http.send(rb.build(), HttpResponse.BodyHandlers.ofString());
            return new Posted(resp.statusCode(), resp.body(), null);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Posted(0, "", e);
        } catch (Exception e) {
            return new Posted(0, "", e);
        }
    }

    // run connects, says hello, serves stdin one request at a time and,
    // at its end, shuts down.
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
        emit(obj("event", "hello", "pid", pid, "session", hex(session), "password", password(), "workload", helloWorkload(),
                "protocol", PROTOCOL));
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

    // Flags are the protocol's start-up flags.
    static final class Flags {
        String zk, register, tokenKind, root, workload;
        // curatorRecipe is not a protocol flag: the subject curator-selector
        // passes --curator-recipe selector (LeaderSelector for the election).
        String curatorRecipe;
        int process;
        long sessionMs;
    }

    // parseFlags reads --name value and --name=value; exits on misuse.
    static Flags parseFlags(String[] args) {
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
            log("usage: CuratorWorker --zk HOST:PORT,... --register URL [--process N] [--session-timeout D] [--token czxid|seq] [--root PATH] [--workload lock|election] [--curator-recipe latch|selector]");
            System.exit(255);
        }
        Flags f = new Flags();
        f.zk = fl.get("zk");
        f.register = fl.get("register");
        f.process = Integer.parseInt(fl.getOrDefault("process", "0"));
        f.sessionMs = parseDuration(fl.getOrDefault("session-timeout", "3s"));
        f.tokenKind = fl.getOrDefault("token", "czxid");
        f.root = fl.getOrDefault("root", "/locks/inventory");
        f.workload = fl.getOrDefault("workload", "lock");
        f.curatorRecipe = fl.getOrDefault("curator-recipe", "default");
        return f;
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
