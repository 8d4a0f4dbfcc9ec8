// Answers the nats-conformance adapter protocol (docs/adapter-protocol.md, version 2) with jnats, the
// NATS client for Java (io.nats:jnats). Its public subject checks are the two of
// io.nats.client.support.Validator that a connection applies before publishing and subscribing,
// chosen by Options.SubjectValidationType: validateSubject (Lenient, the default) and
// validateSubjectStrict (Strict); each throws IllegalArgumentException for a subject it refuses.
// Requests are read with jnats's own io.nats.client.support.JsonParser; this file only reads requests
// and writes answers.
import io.nats.client.support.JsonParser;
import io.nats.client.support.JsonValue;
import io.nats.client.support.Validator;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

public class Adapter {

    static String text(String value) {
        StringBuilder out = new StringBuilder("\"");
        for (char c : value.toCharArray()) {
            if (c == '"' || c == '\\') {
                out.append('\\').append(c);
            } else if (c < 0x20 || c > 0x7e) {
                out.append(String.format("\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        return out.append('"').toString();
    }

    static String answer(String line) {
        JsonValue request;
        try {
            request = JsonParser.parse(line);
        } catch (Exception e) {
            return "{\"id\":null,\"error\":\"bad-request\",\"detail\":\"line is not JSON\"}";
        }
        if (request.map == null) {
            return "{\"id\":null,\"error\":\"bad-request\",\"detail\":\"not an object\"}";
        }
        JsonValue idValue = request.map.get("id");
        String id = idValue == null ? "null" : idValue.toJson();
        JsonValue op = request.map.get("op");
        String name = op == null ? null : op.string;
        if ("hello".equals(name)) {
            Package library = Validator.class.getPackage();
            String version = library == null ? null : library.getImplementationVersion();
            return "{\"id\":" + id + ",\"protocol\":2,\"implementation\":" + text("jnats " + (version == null ? "2.25.1" : version))
                + ",\"server_version\":null,\"ops\":[\"hello\",\"valid_subject\"],"
                + "\"subject_rules\":[\"subscribe\",\"subscribe-lenient\"],"
                + "\"answered_by\":{\"subscribe\":\"Validator.validateSubjectStrict\","
                + "\"subscribe-lenient\":\"Validator.validateSubject\"}}";
        }
        if ("valid_subject".equals(name)) {
            JsonValue subject = request.map.get("subject");
            if (subject == null || subject.string == null) {
                return "{\"id\":" + id + ",\"error\":\"bad-request\",\"detail\":\"missing field 'subject'\"}";
            }
            JsonValue literal = request.map.get("literal");
            if (literal != null && Boolean.TRUE.equals(literal.bool)) {
                return "{\"id\":" + id + ",\"error\":\"bad-request\",\"detail\":\"no publish rule\"}";
            }
            JsonValue lenient = request.map.get("lenient");
            boolean valid = true;
            try {
                if (lenient != null && Boolean.TRUE.equals(lenient.bool)) {
                    Validator.validateSubject(subject.string, true);
                } else {
                    Validator.validateSubjectStrict(subject.string, true);
                }
            } catch (IllegalArgumentException e) {
                valid = false;
            }
            return "{\"id\":" + id + ",\"valid\":" + valid + "}";
        }
        return "{\"id\":" + id + ",\"error\":\"bad-request\",\"detail\":" + text("unknown op " + name) + "}";
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        String line;
        while ((line = in.readLine()) != null) {
            if (line.trim().isEmpty()) {
                continue;
            }
            out.print(answer(line));
            out.print('\n');
            out.flush();
        }
    }
}
