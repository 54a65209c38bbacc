;; Answers with an object patch (ABI 1.4) that does not apply to the object it was sent: it
;; removes a member the object does not have.
(module
  (memory (export "memory") 2)
  (data (i32.const 1024) "@MANIFEST@")
  (func (export "alloc") (param i32) (result i32) (i32.const 8192))
  (func (export "dealloc") (param i32 i32))
  (func (export "manifest") (result i64) (i64.const @MANIFEST_PACKED@))
  ;; Response { object_patch (field 7): [{"op":"remove","path":"/no/such"}] }
  (data (i32.const 4096) "\3a\23\5b\7b\22\6f\70\22\3a\22\72\65\6d\6f\76\65\22\2c\22\70\61\74\68\22\3a\22\2f\6e\6f\2f\73\75\63\68\22\7d\5d")
  (func (export "call") (param i32 i32) (result i64)
    (i64.const 17592186044453)))
